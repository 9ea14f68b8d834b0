# issue 20, minimised input 6 (crashed check, run or repro before the memory budget and the argument checks)
x = (-9223372036854775807-1) % -1
print(x)
