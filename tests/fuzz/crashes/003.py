# issue 20, minimised input 3 (crashed check, run or repro before the memory budget and the argument checks)
x = ''.center(10**12)
print(len(x))
