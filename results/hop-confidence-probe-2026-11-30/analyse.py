"""Rank statistics of the probe's lines: does the reader's sureness tell right chains from wrong?"""
import json, sys, math
rows = [json.loads(l) for f in sys.argv[1:] for l in open(f)]
def stats(r):
    hops = [h for h in r['hops'] if h['first_p'] is not None]
    return {'min_first': min(h['first_p'] for h in hops), 'last_first': hops[-1]['first_p'],
            'min_mean': min(math.exp(h['mean_lp']) for h in hops), 'min_min': min(math.exp(h['min_lp']) for h in hops)}
def auc(pos, neg):
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
S = [(r['em'], stats(r)) for r in rows]
print(len(S), 'chains,', sum(e for e, _ in S), 'right')
for k in S[0][1]:
    right = [s[k] for e, s in S if e]; wrong = [s[k] for e, s in S if not e]
    print(f"{k:11s} AUC {auc(right, wrong):.3f}")
    for floor in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        print(f"   floor {floor}: right below {sum(v < floor for v in right)}/{len(right)}, wrong below {sum(v < floor for v in wrong)}/{len(wrong)}")
