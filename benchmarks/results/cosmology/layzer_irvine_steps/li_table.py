import sys, csv
def load(p):
    rows=[r for r in csv.reader(l for l in open(p) if not l.startswith('#'))]
    h=rows[0]; return [dict(zip(h,r)) for r in rows[1:]]
print("| run | steps | li_error at a = 0.1 | a = 0.3 | a = 1 |")
print("|---|---|---|---|---|")
for name,p in [(a.split('=')[0],a.split('=')[1]) for a in sys.argv[1:]]:
    d=load(p)
    def at(a):
        best=min(d,key=lambda r:abs(float(r['a'])-a)); return float(best['li_error'])
    print(f"| {name} | {len(d)} | {at(0.1):.4f} | {at(0.3):.4f} | {at(1.0):.4f} |")
