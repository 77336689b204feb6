import subprocess, sys, time
t0=time.time()
p=subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
last=0
while p.poll() is None:
    try:
        for l in open(f'/proc/{p.pid}/io'):
            if l.startswith('rchar'): last=int(l.split()[1])
    except Exception: pass
    time.sleep(0.005)
print(f"exit {p.returncode} wall {time.time()-t0:.2f} s read {last/1e6:.1f} MB")
