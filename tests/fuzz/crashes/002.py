# issue 20, minimised input 2 (crashed check, run or repro before the memory budget and the argument checks)
x = [0]*10**12
print(len(x))
