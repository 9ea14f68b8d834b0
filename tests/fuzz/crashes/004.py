# issue 20, minimised input 4 (crashed check, run or repro before the memory budget and the argument checks)
x = format(0, '.1000000f')
print(len(x))
