# Cuts the llama-profiled fixture trace down to a window around the start of
# backward, for tests and fuzz seeds. Run from trace/:
#
#   python3 testdata/cut_fixture.py 15 40 testdata/llama-window.json
#   python3 testdata/cut_fixture.py 2 2 tiny.json lean
#
# The window runs from the BEFORE-th memory event before the first autograd
# op to the AFTER-th after it. Kept: metadata events, X events overlapping
# the window (python functions only where they enclose a kept op or memory
# event), other events inside it; cpu_op shape args are dropped. "lean" also
# drops kernels, flows to kernels, CUDA calls and python functions.
import json,gzip,re,bisect,sys
d=json.load(gzip.open('../fixtures/llama-profiled/trace.json.gz'),parse_float=str)
ev=d['traceEvents']
f=float
a,b,path=int(sys.argv[1]),int(sys.argv[2]),sys.argv[3]
lean=len(sys.argv)>4
mems=sorted(f(e['ts']) for e in ev if e.get('name')=='[memory]')
bw=min(f(e['ts']) for e in ev if e.get('cat')=='cpu_op' and e['name'].startswith('autograd::engine'))
k=bisect.bisect_left(mems,bw)
lo,hi=mems[k-a],mems[k+b]
drop={'Input Dims','Input type','Input Strides','Concrete Inputs'}
sel=[]
for e in ev:
    if lean and e.get('cat') in ('ac2g','kernel','cuda_runtime','cuda_driver','python_function'): continue
    if e.get('ph')!='M':
        ts=f(e.get('ts',0)); dur=f(e.get('dur',0))
        if e.get('ph')=='X':
            if not (ts<=hi and ts+dur>=lo): continue
        elif not (lo<=ts<=hi): continue
    if 'args' in e and e.get('cat')=='cpu_op':
        e=dict(e); e['args']={k:v for k,v in e['args'].items() if k not in drop}
    sel.append(e)
# keep only python functions that enclose a kept op or memory event
anchors=[(e['tid'],f(e['ts'])) for e in sel if e.get('cat') in ('cpu_op','cpu_instant_event','user_annotation')]
def useful(e):
    if e.get('cat')!='python_function': return True
    ts=f(e['ts']); end=ts+f(e['dur'])
    return any(t==e['tid'] and ts<=x<=end for t,x in anchors)
sel=[e for e in sel if useful(e)]
head={k:v for k,v in d.items() if k!='traceEvents'}
lines=[json.dumps(e,separators=(', ',': ')) for e in sel]
h=json.dumps(head,separators=(', ',': '))
s=h[:-1]+', "traceEvents": [\n'+',\n'.join(lines)+'\n]}\n'
s=re.sub(r'"(ts|dur|baseTimeNanoseconds)": "(-?[0-9.]+)"', r'"\1": \2', s)
json.loads(s)
open(path,'w').write(s)
print(path,len(sel),sum(1 for e in sel if e.get('name')=='[memory]'),sum(1 for e in sel if e.get('cat')=='fwdbwd'),len(s))
