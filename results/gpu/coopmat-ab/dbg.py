import sys, numpy as np
# Which elements of the new build's O differ from the old build's (flash.comp).
for n in sys.argv[2:]:
    a = np.load(f"{sys.argv[1]}/old-{n}.npy")[0, 0]
    b = np.load(f"{sys.argv[1]}/new-{n}.npy")[0, 0]
    bad = ~np.isfinite(b) | (np.abs(b - a) > 1e-2)
    r, c = np.nonzero(bad)
    print(f"N={n}: {bad.sum()} of {bad.size} bad, {(~np.isfinite(b)).sum()} non-finite")
    print("  by row%16:", np.bincount(r % 16, minlength=16).tolist())
    print("  by col%16:", np.bincount(c % 16, minlength=16).tolist())
    print("  by row//16:", np.bincount(r // 16).tolist(), " by col//16:", np.bincount(c // 16).tolist())
    print("  first:", list(zip(r[:12].tolist(), c[:12].tolist())))
    print("  sample new/old:", [(float(b[i, j]), float(a[i, j])) for i, j in zip(r[:4], c[:4])])
