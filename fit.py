import json, sys, math, glob
recs=[json.loads(l) for f in sys.argv[1:] for l in open(f)]
def model(r,P,cf,bf):
    if P==0: return r["old"]
    core=r["CK"]+cf*r["hed"]+(r["lv"] if bf>=1 else 0)+(r["chainmin"] if bf>=2 else 0)
    return (r["pipe"]**P+core**P)**(1/P)
def score(P,cf,bf,show=False):
    errs=[]
    for r in recs:
        m=model(r,P,cf,bf)+r["iface"]; e=m/r["replay"]; errs.append((e,r))
        if show: print("%4d r%d g%d %6g %5s %-8s ratio %.3f (old %.3f)" % (r["n"],r["rails"],r["gpn"],r["nic"],r["sz"],r["coder"],e,(r["old"]+r["iface"])/r["replay"]))
    lo=min(e for e,_ in errs); hi=max(e for e,_ in errs); rms=math.sqrt(sum(math.log(e)**2 for e,_ in errs)/len(errs))
    return lo,hi,rms
if __name__=="__main__":
    print("old", score(0,0,0))
    for P in (2,2.5,3,4,6):
        for cf in (0,1,2,3):
            for bf in (0,1,2):
                lo,hi,rms=score(P,cf,bf); print("P %g cf %g bf %d: %.3f-%.3f rms %.4f"%(P,cf,bf,lo,hi,rms))
