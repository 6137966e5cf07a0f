# Prints a function whose N scale results are all live at once (each is
# read by a chain of adds after the last scale), for plan-memory-limits.mlir.
import sys

n = int(sys.argv[1])
t = "tensor<?x?x2047xf32>"
print(f"func.func @many(%x: {t}) -> {t} {{")
for i in range(n):
    print(f"  %s{i} = tfm.scale %x by 2.0 : {t}")
print(f"  %a0 = tfm.add %s0, %s1 : {t}")
for i in range(2, n):
    print(f"  %a{i - 1} = tfm.add %a{i - 2}, %s{i} : {t}")
print(f"  return %a{n - 2} : {t}")
print("}")
