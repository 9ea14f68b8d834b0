# issue 20, minimised input 5 (crashed check, run or repro before the memory budget and the argument checks)
x = '{:>1000000000}'.format(1)
print(len(x))
