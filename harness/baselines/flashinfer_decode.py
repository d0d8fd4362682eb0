#!/usr/bin/env python3
"""flashinfer_decode.py - run FlashInfer's paged-KV decode on a decodelab golden
file and write one candidate file per backend, for `decodelab compare`.

What it does (see harness/baselines/README.md and data/SCHEMA.md):
  1. reads the golden file with h5py (format decodelab-golden, version 1): Q, the
     paged KV cache (same CSR page table, NHD or HND layout, same dtypes: the
     cache codes are handed to FlashInfer as they are stored, no copy into
     another layout), the per-KV-head scales, sm_scale;
  2. builds BatchDecodeWithPagedKVCacheWrapper for each backend:
       cuda-core  use_tensor_cores=False (FlashInfer's CUDA-core decode)
       tc-fa2     use_tensor_cores=True, backend="fa2" (the prefill kernel, one query row per request)
       tc-fa3     use_tensor_cores=True, backend="fa3" (Hopper; FlashInfer allows it only when Q and KV have
                  the same dtype, so it is skipped with a reason for an FP8 cache with a 16-bit Q)
       xqa        flashinfer.decode.xqa_batch_decode_with_kv_cache: FlashInfer's port of TensorRT-LLM's
                  XQA decode (Hopper, QGMMA: it computes in FP8 on an FP8 cache); a dense block table
                  [B, max pages] built from the CSR one, bmm1_scale = sm_scale * k_scale, bmm2_scale =
                  v_scale. It returns no lse: its candidate holds o alone, claims no model and is judged
                  by the precision band of its compute (fp8 on an FP8 cache, bf16 otherwise) against exact
     FP8 caches: FlashInfer takes one k_scale and one v_scale float per call, so the
     golden file must have one scale for all heads (decodelab golden --kv-scale
     absmax-tensor, or a given scale); per-head scales are refused;
  3. checks each backend once on an output prefilled with NaN (an element it does not
     write stays NaN and `decodelab compare` counts it), twice for determinism;
  4. times it the harness's way: 3 warm-ups; per sample, flush L2 by writing a
     buffer of 2x the L2 size, then a spin kernel (so that Python's launch overhead
     stays out of the measurement), CUDA event, one wrapper.run(), CUDA event; stop when
     the sample stdrel < --max-stdrel with >= --min-samples samples, or at
     --max-time-s; report the median;
  5. writes DIR/<golden stem>.<backend>.cand.h5 (format decodelab-candidate v1):
     o [B, Hq, D] in FlashInfer's output dtype (the Q dtype: bf16 stored as uint16
     with dtype "bf16"), lse [B, Hq] float32 as FlashInfer returns it (log2:
     lse_base "2"), and the producer ("flashinfer <version>"), settings, timing.

Without a GPU: `--fake-o MODEL` writes a candidate from the golden file's own
MODEL output rounded to bf16 (no torch, no FlashInfer): it exercises the golden
reading, the hash and the candidate writer (tests/test_compare_cli.c runs it).
`--prebuild DIR` compiles FlashInfer's JIT modules for Hopper without a GPU
(FLASHINFER_CUDA_ARCH_LIST=9.0a, nvcc needed) into DIR/<module>/<module>.so, the
layout of FlashInfer's AOT directory (flashinfer/data/aot), so that a machine
without time to compile can load them; if one fails to load there, FlashInfer
compiles it itself.

Usage:
  flashinfer_decode.py GOLDEN.h5 --out-dir DIR [--backends cuda-core,tc-fa2,tc-fa3]
        [--decodelab PATH | --golden-hash fnv1a64:...] [--peak-read-gbps X]
        [--max-time-s 2] [--min-samples 10] [--max-stdrel 0.005] [--no-time]
  flashinfer_decode.py GOLDEN.h5 --out-dir DIR --fake-o bf16
  flashinfer_decode.py --prebuild DIR [--dtypes bf16:e4m3,bf16:bf16] [--head-dim 128]
  flashinfer_decode.py --warm [--dtypes ...]      (GPU machine: compile what the AOT dir lacks)
  flashinfer_decode.py --table RESULTS.csv...    (the side-by-side markdown table)
  flashinfer_decode.py --summary RESULTS.csv...  (per configuration: read, ours, FlashInfer, XQA, speed-ups)
  flashinfer_decode.py --targets RESULTS.csv...  (issue 10's targets judged: frac_ref, speed-ups, e4m3 / bf16)
Exit status: 0 written, 1 a backend failed to run (others still written), 2 bad input.
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

BACKENDS = ("cuda-core", "tc-fa2", "tc-fa3", "xqa")
FP8 = ("e4m3", "e5m2")


class Refused(Exception):
    """Bad input: one line naming the file, the field and the value (exit 2)."""


# ---------------------------------------------------------------- golden file

def decode_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def read_golden(path, need_models=()):
    """The golden file as numpy arrays (codes as stored) plus its config."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise Refused(f"{path}: cannot open as HDF5 ({e})")
    with f:
        fmt = f.attrs.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt != "decodelab-golden":
            raise Refused(f"{path}: format is {fmt!r}, expected 'decodelab-golden'")
        if int(f.attrs.get("format_version", -1)) != 1:
            raise Refused(f"{path}: format_version is {f.attrs.get('format_version')}, expected 1")
        cfg = {}
        for k, v in f["config"].attrs.items():
            cfg[k] = v.decode() if isinstance(v, bytes) else v
        g = {"path": path, "cfg": cfg}
        inp = f["inputs"]
        for name in ("q", "k_cache", "v_cache", "k_scale", "v_scale", "kv_indptr", "kv_indices", "kv_last_page_len"):
            if name not in inp:
                raise Refused(f"{path}: dataset /inputs/{name} is missing")
            ds = inp[name]
            g[name] = ds[...]
            dt = ds.attrs.get("dtype")
            g[name + "_dtype"] = dt.decode() if isinstance(dt, bytes) else dt
        if g["q_dtype"] != cfg["q_dtype"] or g["k_cache_dtype"] != cfg["kv_dtype"]:
            raise Refused(f"{path}: /inputs dtype attributes {g['q_dtype']}/{g['k_cache_dtype']} disagree with "
                          f"/config q_dtype/kv_dtype {cfg['q_dtype']}/{cfg['kv_dtype']}")
        g["models"] = {}
        for m in need_models:
            if f"golden/{m}" not in f:
                raise Refused(f"{path}: /golden/{m} is missing")
            g["models"][m] = (f[f"golden/{m}/o"][...].astype(np.float64), f[f"golden/{m}/lse"][...].astype(np.float64))
    B, Hq, D = int(cfg["batch_size"]), int(cfg["num_qo_heads"]), int(cfg["head_dim"])
    if g["q"].shape != (B, Hq, D):
        raise Refused(f"{path}: /inputs/q has shape {g['q'].shape}, expected {(B, Hq, D)}")
    return g


def fnv1a64_py(h, data):
    mask = 0xFFFFFFFFFFFFFFFF
    for b in data.tobytes():
        h = ((h ^ b) * 0x100000001B3) & mask
    return h


def fnv_numba():
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(cache=False)
    def fnv(h, data):
        for i in range(data.shape[0]):
            h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
        return h

    return lambda h, data: int(fnv(np.uint64(h), data))


def golden_hash(g, decodelab=None, given=None):
    """The inputs hash `decodelab run` records (data/SCHEMA.md, results: golden_hash)."""
    if given:
        return given
    if decodelab:
        r = subprocess.run([decodelab, "compare", "--golden-hash", g["path"]], capture_output=True, text=True)
        if r.returncode != 0:
            raise Refused(f"{g['path']}: {decodelab} compare --golden-hash failed: {r.stderr.strip()}")
        return r.stdout.strip()
    blocks = [np.ascontiguousarray(g[n]).view(np.uint8).reshape(-1) for n in
              ("q", "k_cache", "v_cache", "k_scale", "v_scale", "kv_indptr", "kv_indices", "kv_last_page_len")]
    total = sum(b.size for b in blocks)
    fn = fnv_numba() if total > (1 << 20) else None
    if fn is None:
        if total > (64 << 20):
            print(f"note: hashing {total >> 20} MiB in pure Python is slow; pass --decodelab", file=sys.stderr)
        fn = fnv1a64_py
    h = 0xCBF29CE484222325
    for b in blocks:
        h = fn(h, np.array([b.size], dtype="<u8").view(np.uint8))
        h = fn(h, b)
    return f"fnv1a64:{h:016x}"


def per_tensor_scales(g):
    """FlashInfer's decode takes one k_scale and one v_scale: the golden's must be equal over heads."""
    ks, vs = g["k_scale"].astype(np.float32), g["v_scale"].astype(np.float32)
    for name, s in (("k_scale", ks), ("v_scale", vs)):
        if not np.all(s == s[0]):
            raise Refused(f"{g['path']}: /inputs/{name} differs between KV heads ({s.min():g}..{s.max():g}, "
                          f"kv_scale_mode {g['cfg'].get('kv_scale_mode')}): FlashInfer's decode takes one per-tensor "
                          f"scale; generate the golden file with --kv-scale absmax-tensor")
    return float(ks[0]), float(vs[0])


# ---------------------------------------------------------------- candidate file

def write_candidate(path, g, ghash, o, o_dtype, lse, lse_base, attrs):
    """Write a decodelab-candidate v1 file atomically. o: numpy float32 [B,Hq,D] (rounded to
    o_dtype here when o_dtype is bf16/f16) or uint16 codes already in o_dtype; lse float32 or None."""
    import h5py

    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        _write_candidate_file(h5py, tmp, ghash, o, o_dtype, lse, lse_base, attrs)
        os.replace(tmp, path)
    finally:  # a write that failed leaves nothing behind (the temporary file removed)
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _write_candidate_file(h5py, tmp, ghash, o, o_dtype, lse, lse_base, attrs):
    """write_candidate's file, at tmp, flushed to disk."""
    with h5py.File(tmp, "w") as f:
        f.attrs["format"] = "decodelab-candidate"
        f.attrs["format_version"] = np.int64(1)
        f.attrs["golden_hash"] = ghash
        f.attrs["lse_base"] = lse_base
        for k, v in attrs.items():
            if v is None:
                continue
            if isinstance(v, str):
                f.attrs[k] = v
            elif isinstance(v, (bool, np.bool_)):
                f.attrs[k] = np.int64(int(v))
            elif isinstance(v, (int, np.integer)):
                f.attrs[k] = np.int64(v)
            else:
                f.attrs[k] = np.float64(v)
        if o.dtype == np.uint16:
            d = f.create_dataset("o", data=o)
        elif o_dtype == "f32":
            d = f.create_dataset("o", data=o.astype(np.float32))
        elif o_dtype == "bf16":
            d = f.create_dataset("o", data=round_bf16_bits(o.astype(np.float32)))
        elif o_dtype == "f16":
            d = f.create_dataset("o", data=o.astype(np.float16).view(np.uint16))
        else:
            raise ValueError(o_dtype)
        d.attrs["dtype"] = o_dtype
        if lse is not None:
            d = f.create_dataset("lse", data=lse.astype(np.float32))
            d.attrs["dtype"] = "f32"
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def round_bf16_bits(x):
    """float32 -> bf16 bit patterns, round to nearest even (NaN kept NaN)."""
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = 0x7FC0
    return r


def stem(path):
    b = os.path.basename(path)
    return b[:-3] if b.endswith(".h5") else b


# ---------------------------------------------------------------- FlashInfer

TORCH_DT = {}


def torch_dtypes():
    import torch

    TORCH_DT.update({"f16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn,
                     "e5m2": torch.float8_e5m2, "f32": torch.float32})
    return TORCH_DT


def to_device(g):
    """The golden inputs as CUDA tensors in FlashInfer's dtypes (bit-identical views of the codes)."""
    import torch

    dt = torch_dtypes()
    cfg = g["cfg"]
    qd, kvd = cfg["q_dtype"], cfg["kv_dtype"]
    if qd not in ("f16", "bf16"):
        raise Refused(f"{g['path']}: q_dtype {qd}: FlashInfer's decode takes a f16 or bf16 query")
    dev = torch.device("cuda")

    def codes(a, d):
        t = torch.from_numpy(np.ascontiguousarray(a))
        if d in ("f16", "bf16"):
            t = t.view(torch.int16)
        elif d in FP8:
            t = t.view(torch.uint8)
        return t.to(dev).view(dt[d])

    return {
        "q": codes(g["q"], qd),
        "k": codes(g["k_cache"], kvd),
        "v": codes(g["v_cache"], kvd),
        "indptr": torch.from_numpy(g["kv_indptr"].astype(np.int32)).to(dev),
        "indices": torch.from_numpy(g["kv_indices"].astype(np.int32)).to(dev),
        "last": torch.from_numpy(g["kv_last_page_len"].astype(np.int32)).to(dev),
    }


def make_wrapper(backend, layout, ws):
    import flashinfer

    if backend == "cuda-core":
        return flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, layout, use_tensor_cores=False)
    fa = backend.split("-")[1]
    return flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, layout, use_tensor_cores=True, backend=fa)


def backend_supported(backend, cfg):
    """None when the backend can run this case here, else the reason."""
    import torch

    if backend == "xqa":
        import flashinfer.decode as fd

        major, minor = torch.cuda.get_device_capability()
        if major < 9:
            return f"xqa needs sm_90 or newer, this GPU is sm_{major}{minor}"
        if not hasattr(fd, "xqa_batch_decode_with_kv_cache"):
            return "this FlashInfer has no flashinfer.decode.xqa_batch_decode_with_kv_cache"
    if backend == "tc-fa3":
        major, minor = torch.cuda.get_device_capability()
        if major != 9:
            return f"fa3 needs a Hopper GPU (sm_90), this one is sm_{major}{minor}"
        if cfg["kv_dtype"] in FP8 and cfg["q_dtype"] not in FP8:
            return "FlashInfer's fa3 backend needs an FP8 query for an FP8 KV cache (Q is %s)" % cfg["q_dtype"]
    return None


def timing(run_once, flush, max_time_s, min_samples, max_stdrel, max_samples=1000):
    """NVBench-style: per sample flush L2, spin, event, one run, event."""
    import torch

    stream = torch.cuda.current_stream()
    for _ in range(3):
        run_once()
    torch.cuda.synchronize()
    # spin long enough that the host has enqueued the run before the start event fires
    spin_cycles = int(1e-3 * 2.0e9)  # ~1 ms at 2 GHz (Python spends ~0.1 ms in wrapper.run)
    samples, t0 = [], time.perf_counter()
    i = 0
    while True:
        i += 1
        if flush is not None:
            flush.fill_(i & 0xFF)
        torch.cuda._sleep(spin_cycles)
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record(stream)
        run_once()
        b.record(stream)
        b.synchronize()
        samples.append(a.elapsed_time(b) * 1e3)  # ms -> us
        n = len(samples)
        mean = sum(samples) / n
        std = math.sqrt(sum((s - mean) ** 2 for s in samples) / (n - 1)) if n > 1 else float("inf")
        stdrel = std / mean if mean > 0 else float("inf")
        elapsed = time.perf_counter() - t0
        converged = n >= min_samples and stdrel < max_stdrel
        if converged or elapsed > max_time_s or n >= max_samples:
            break
    s = sorted(samples)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"median_us": med, "min_us": s[0], "max_us": s[-1], "mean_us": mean, "stdrel": stdrel if n > 1 else 0.0,
            "samples": n, "converged": int(converged), "elapsed_s": elapsed}


def driver_version():
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetCudaDriverVersion()
        return f"{v // 1000}.{(v % 1000) // 10}"
    except Exception:  # noqa: BLE001 - optional provenance
        return None


def run_backends(args, g, ghash):
    import torch
    import flashinfer

    cfg = g["cfg"]
    B, Hq, Hkv, D, ps = (int(cfg[k]) for k in ("batch_size", "num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
    layout, qd, kvd = cfg["kv_layout"], cfg["q_dtype"], cfg["kv_dtype"]
    ks, vs = per_tensor_scales(g)
    sm_scale = float(cfg["sm_scale"]) or 1.0 / math.sqrt(D)
    t = to_device(g)
    dt = torch_dtypes()
    ws = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 50 << 20))
    flush = None if args.no_time else torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    version = getattr(flashinfer, "__version__", "unknown")
    producer = f"flashinfer {version}"
    drv = driver_version()
    rc = 0
    for backend in args.backends:
        why = backend_supported(backend, cfg)
        if why:
            print(f"SKIP {backend}: {why}", flush=True)
            continue
        if backend == "xqa":
            rc |= run_xqa(args, g, ghash, t, dt, ks, vs, sm_scale, flush, producer, drv)
            continue
        t0 = time.perf_counter()
        try:
            w = make_wrapper(backend, layout, ws)
            plan_kw = dict(q_data_type=dt[qd], kv_data_type=dt[kvd], sm_scale=sm_scale)
            w.plan(t["indptr"], t["indices"], t["last"], Hq, Hkv, D, ps, **plan_kw)
            run_kw = {"return_lse": True}
            if ks != 1.0:
                run_kw["k_scale"] = ks
            if vs != 1.0:
                run_kw["v_scale"] = vs
            out = torch.full((B, Hq, D), float("nan"), dtype=dt[qd], device="cuda")
            lse = torch.full((B, Hq), float("nan"), dtype=torch.float32, device="cuda")
            import inspect

            rp = inspect.signature(w.run).parameters
            if "out" in rp:
                run_kw["out"] = out
            if "lse" in rp:
                run_kw["lse"] = lse

            def run_once():
                return w.run(t["q"], (t["k"], t["v"]), **run_kw)

            o1, l1 = run_once()
            torch.cuda.synchronize()
            o1, l1 = o1.clone(), l1.clone()
            out.fill_(float("nan"))
            lse.fill_(float("nan"))
            o2, l2_ = run_once()
            torch.cuda.synchronize()
            det = bool(torch.equal(o1.view(torch.int16), o2.view(torch.int16)) and
                       torch.equal(l1.view(torch.int32), l2_.view(torch.int32)))
            setup_s = time.perf_counter() - t0
            tm = None if args.no_time else timing(run_once, flush, args.max_time_s, args.min_samples, args.max_stdrel)
        except Exception as e:  # noqa: BLE001 - report, go on with the other backends
            print(f"FAIL {backend}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            rc = 1
            continue
        o_dtype = {torch.bfloat16: "bf16", torch.float16: "f16"}[o1.dtype]
        tc = backend != "cuda-core"
        attrs = {
            "producer": producer,
            "backend": backend,
            "settings": (f"BatchDecodeWithPagedKVCacheWrapper(kv_layout={layout}, use_tensor_cores={tc}"
                         + (f", backend={backend.split('-')[1]!r}" if tc else "") + f"); plan(q_data_type={qd}, "
                         f"kv_data_type={kvd}, sm_scale={sm_scale:.9g}); run(k_scale={ks:.9g}, v_scale={vs:.9g}, "
                         f"return_lse=True); o dtype {o_dtype}; torch {torch.__version__}; "
                         f"setup+JIT {setup_s:.1f} s"),
            # a bf16 Q: the output rounded to 16 bits (and P too on tensor cores), judged as the bf16 model; an
            # f16 Q is not rounded to bf16 as that model's is: no model, judged by the compute's band against exact
            "model": "bf16" if qd == "bf16" else None,
            "compute": "bf16" if tc else "fp32",
            "dequant": ("fast" if tc else "cast") if kvd in FP8 else "none",
            "unit": {"cuda-core": "simt", "tc-fa2": "mma", "tc-fa3": "wgmma"}[backend],
        }
        try:  # a write that fails is this backend's failure, not the others'
            save_candidate(args, g, ghash, backend, o1, l1.float().cpu().numpy(), "2", attrs, tm, det, drv, setup_s)
        except Exception as e:  # noqa: BLE001 - report, go on with the other backends
            print(f"FAIL {backend}: writing its candidate: {type(e).__name__}: {e}", flush=True)
            rc = 1
    return rc


def save_candidate(args, g, ghash, backend, o, lse, lse_base, attrs, tm, det, drv, setup_s):
    """The part every backend shares: the device and timing attributes, the candidate file
    (o as its 16-bit codes), one line saying what was written."""
    import torch

    attrs.update({"deterministic": int(det), "device_name": torch.cuda.get_device_name(0),
                  "runtime_version": torch.version.cuda, "driver_version": drv})
    if tm:
        attrs.update(tm)
        attrs["timing_mode"] = "cold-l2"
        if args.peak_read_gbps:
            attrs["peak_read_gbps"] = args.peak_read_gbps
    o_bits = o.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
    o_dtype = {torch.bfloat16: "bf16", torch.float16: "f16"}[o.dtype]
    path = os.path.join(args.out_dir, f"{stem(g['path'])}.{backend}.cand.h5")
    write_candidate(path, g, ghash, o_bits, o_dtype, lse, lse_base, attrs)
    msg = f"median {tm['median_us']:.2f} us ({tm['samples']} samples, stdrel {100 * tm['stdrel']:.2f}%)" if tm else "not timed"
    print(f"wrote {path}: {backend} {msg}, setup {setup_s:.1f} s, deterministic {det}", flush=True)


def run_xqa(args, g, ghash, t, dt, ks, vs, sm_scale, flush, producer, drv):
    """The xqa backend (see the module comment): check twice, time, write an o-only candidate. 0 ok, 1 failed."""
    import torch
    import flashinfer.decode as fd

    cfg = g["cfg"]
    B, Hq, D, ps = (int(cfg[k]) for k in ("batch_size", "num_qo_heads", "head_dim", "page_size"))
    layout, qd, kvd = cfg["kv_layout"], cfg["q_dtype"], cfg["kv_dtype"]
    t0 = time.perf_counter()
    try:
        indptr = g["kv_indptr"].astype(np.int64)
        npages = indptr[1:] - indptr[:-1]
        table = np.zeros((B, max(1, int(npages.max()))), dtype=np.int32)
        for b in range(B):
            table[b, : npages[b]] = g["kv_indices"][indptr[b]: indptr[b + 1]]
        lens = (npages - 1) * ps + g["kv_last_page_len"].astype(np.int64)
        bt = torch.from_numpy(table).cuda()
        sl = torch.from_numpy(lens.astype(np.uint32)).cuda()
        xws = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")  # zero before first use (its semaphores)
        out = torch.full((B, Hq, D), float("nan"), dtype=dt[qd], device="cuda")

        def run_once():
            return fd.xqa_batch_decode_with_kv_cache(t["q"], (t["k"], t["v"]), xws, bt, sl, int(lens.max()),
                                                     bmm1_scale=sm_scale * ks, bmm2_scale=vs, out=out,
                                                     kv_layout=layout)

        o1 = run_once()
        torch.cuda.synchronize()
        o1 = o1.clone()
        out.fill_(float("nan"))
        o2 = run_once()
        torch.cuda.synchronize()
        det = bool(torch.equal(o1.view(torch.int16), o2.view(torch.int16)))
        setup_s = time.perf_counter() - t0
        tm = None if args.no_time else timing(run_once, flush, args.max_time_s, args.min_samples, args.max_stdrel)
    except Exception as e:  # noqa: BLE001 - report, go on with the other backends
        print(f"FAIL xqa: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
        return 1
    o_dtype = {torch.bfloat16: "bf16", torch.float16: "f16"}[o1.dtype]
    attrs = {
        "producer": producer,
        "backend": "xqa",
        "settings": (f"flashinfer.decode.xqa_batch_decode_with_kv_cache(kv_layout={layout}, bmm1_scale="
                     f"{sm_scale * ks:.9g}, bmm2_scale={vs:.9g}, dense block table [{B}, {table.shape[1]}]); "
                     f"q {qd}, kv {kvd}; o dtype {o_dtype}; no lse; torch {torch.__version__}; "
                     f"setup+JIT {setup_s:.1f} s"),
        # FP8 arithmetic (Q and P in e4m3) on an FP8 cache: no model of ours computes exactly that; judged
        # by the fp8 model's band against exact (compute fp8), or bf16's on a 16-bit cache
        "model": None,  # no model attribute (write_candidate skips None)
        "compute": "fp8" if kvd in FP8 else "bf16",
        "dequant": "none",
        "unit": "wgmma",
    }
    save_candidate(args, g, ghash, "xqa", o1, None, "e", attrs, tm, det, drv, setup_s)
    return 0


# ---------------------------------------------------------------- prebuild (no GPU)

def prebuild(args):
    """--prebuild DIR: compile for sm_90a here (no GPU) and copy each module to DIR/<name>/<name>.so.
    --warm: on the GPU machine, compile into FlashInfer's own JIT cache every module that its AOT
    directory does not hold in a loadable form (run in the background while golden files are made)."""
    if not args.warm:
        os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    import torch
    from flashinfer.jit.attention import gen_batch_decode_module, gen_batch_prefill_module

    dt = torch_dtypes()
    if not args.warm:
        os.makedirs(args.prebuild, exist_ok=True)
    rc = 0
    for pair in args.dtypes.split(","):
        qd, kvd = pair.split(":")
        q, kv = dt[qd], dt[kvd]
        specs = [("cuda-core", lambda: gen_batch_decode_module(q, kv, q, torch.int32, args.head_dim, args.head_dim,
                                                                 0, False, False))]
        specs.append(("tc-fa2", lambda: gen_batch_prefill_module("fa2", q, kv, q, torch.int32, args.head_dim,
                                                                   args.head_dim, 0, False, False, False)))
        if kvd not in FP8:
            specs.append(("tc-fa3", lambda: gen_batch_prefill_module("fa3", q, kv, q, torch.int32, args.head_dim,
                                                                       args.head_dim, 0, False, False, False)))
        for name, gen in specs:
            t0 = time.perf_counter()
            try:
                spec = gen()
                if args.warm and spec.is_aot:
                    try:
                        spec.load(spec.aot_path)
                        print(f"aot {name} q={qd} kv={kvd}: {spec.name} loads", flush=True)
                        continue
                    except Exception as e:  # noqa: BLE001 - fall back to compiling it
                        print(f"aot {name} q={qd} kv={kvd} does not load ({e}); compiling", flush=True)
                spec.build(verbose=False, need_lock=bool(args.warm))
                if args.warm:
                    print(f"compiled {name} q={qd} kv={kvd} in {time.perf_counter() - t0:.0f} s", flush=True)
                    continue
                dst = os.path.join(args.prebuild, spec.name)
                os.makedirs(dst, exist_ok=True)
                shutil.copy2(spec.jit_library_path, os.path.join(dst, spec.name + ".so"))
                size = os.path.getsize(spec.jit_library_path)
                print(f"built {name} q={qd} kv={kvd}: {spec.name}.so {size / 2**20:.1f} MiB in "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"FAIL prebuild {name} q={qd} kv={kvd}: {type(e).__name__}: {e}", flush=True)
                rc = 1
    return rc


# ---------------------------------------------------------------- the side-by-side table

RESULT_COLUMNS = ("golden_hash", "config_name", "variant", "verdict", "model", "time_median_s")


def load_results(csv_paths):
    """The rows of one or more results CSVs (decodelab's results tables, e.g. one per device call) as dicts,
    in order; a later file supersedes: where it has rows of a (golden file, variant), the earlier files' rows of
    that pair are dropped (a rerun of some configurations beside an older full run). Refused naming the first
    file that is missing or lacks a column the tables read."""
    import csv

    rows = []
    for path in [csv_paths] if isinstance(csv_paths, str) else csv_paths:
        if not os.path.exists(path):
            raise Refused(f"{path}: no results table (did any step run?)")
        reader = csv.DictReader(open(path, newline=""))
        missing = [c for c in RESULT_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise Refused(f"{path}: not a decodelab results table (no column '{missing[0]}')")
        new = list(reader)
        redone = {(r["golden_hash"], r["variant"]) for r in new}
        rows = [r for r in rows if (r["golden_hash"], r["variant"]) not in redone] + new
    return rows


def num(r, k):
    """Field k of a results row as a float (nan when empty or absent)."""
    try:
        return float(r[k])
    except (KeyError, ValueError, TypeError):
        return math.nan


def table(csv_paths, out=sys.stdout):
    """One markdown table from one or more results CSVs: per configuration, every decodelab variant and external
    backend with its verdict, error vs exact, median time, fraction of the read peak and the speed
    ratio to the fastest external (FlashInfer) backend of that configuration (>1: faster than it)."""
    rows = load_results(csv_paths)

    groups = {}
    for r in rows:
        groups.setdefault(r["golden_hash"], []).append(r)
    print("| configuration | kernel | verdict | o rel L2 vs exact | median us | % of read peak | x vs fastest FlashInfer |",
          file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for rs in groups.values():
        ext = [num(r, "time_median_s") for r in rs if r["variant"].startswith("ext:") and num(r, "time_median_s") > 0]
        best = min(ext) if ext else math.nan
        keep = ("B", "Hq", "Hkv", "kv", "len")
        short = " ".join(w for w in rs[0]["config_name"].split() if w.split("=")[0] in keep)
        for r in sorted(rs, key=lambda r: num(r, "time_median_s") if num(r, "time_median_s") > 0 else math.inf):
            t = num(r, "time_median_s")
            timed = t > 0
            ratio = best / t if timed and best > 0 else math.nan
            name = r["variant"][4:] if r["variant"].startswith("ext:") else r["variant"]
            cells = [short, name, r["verdict"], f"{num(r, 'exact_o_rel_l2'):.2e}",
                     f"{1e6 * t:.1f}" if timed else "-", f"{100 * num(r, 'frac_peak'):.1f}" if timed else "-",
                     f"{ratio:.2f}x" if ratio == ratio else "-"]
            print("| " + " | ".join(cells) + " |", file=out)
    return 0


def fastest(rs):
    """The row of rs with the shortest median time (None when none was timed)."""
    rs = [r for r in rs if num(r, "time_median_s") > 0]
    return min(rs, key=lambda r: num(r, "time_median_s")) if rs else None


def configurations(rows):
    """The rows grouped by golden file (one configuration each, in order of first appearance), each group with
    the picks issue 10 compares: our fastest PASS variant of a 16-bit model, of any model, FlashInfer's fastest
    non-XQA backend and XQA (None where absent): a list of (rows, o16, oany, fi, xqa)."""
    groups = {}
    for r in rows:
        groups.setdefault(r["golden_hash"], []).append(r)
    out = []
    for rs in groups.values():
        ours = [r for r in rs if not r["variant"].startswith("ext:") and r["verdict"] == "PASS"]
        ext = [r for r in rs if r["variant"].startswith("ext:")]
        out.append((rs, fastest([r for r in ours if not r["model"].startswith("fp8")]), fastest(ours),
                    fastest([r for r in ext if not r["variant"].endswith(":xqa")]),
                    fastest([r for r in ext if r["variant"].endswith(":xqa")])))
    return out


def summary(csv_paths, out=sys.stdout):
    """Issue 10's per-configuration summary of one or more results CSVs: the read reference of the run (ref_read_s), our
    fastest PASS variant with a 16-bit-model accuracy (its model not fp8*) and its frac_ref, our fastest PASS
    variant of any model, FlashInfer's fastest non-XQA backend (with its verdict) and XQA, and the speed-ups
    of ours over each (time of theirs / time of ours; '-' where a side was not timed)."""
    rows = load_results(csv_paths)

    def us(r):
        return f"{1e6 * num(r, 'time_median_s'):.1f}" if r else "-"

    def x(theirs, ours):
        return f"{num(theirs, 'time_median_s') / num(ours, 'time_median_s'):.2f}x" if theirs and ours else "-"

    print("| configuration | KV MB | read us | ours, 16-bit-model accuracy | frac_ref | ours, any model | "
          "FlashInfer non-XQA best | vs it (16-bit / any) | XQA | vs XQA (16-bit / any) |", file=out)
    print("|---|---|---|---|---|---|---|---|---|---|", file=out)
    for rs, o16, oany, fi, xqa in configurations(rows):
        reads = [num(r, "ref_read_s") for r in rs if num(r, "ref_read_s") > 0]
        keep = ("B", "Hq", "Hkv", "kv", "len")
        short = " ".join(w for w in rs[0]["config_name"].split() if w.split("=")[0] in keep)
        name = lambda r: r["variant"].split(":")[-1] if r["variant"].startswith("ext:") else r["variant"]
        cells = [short, f"{num(rs[0], 'bytes_kv') / 1e6:.0f}", f"{1e6 * min(reads):.1f}" if reads else "-",
                 f"{us(o16)} ({name(o16)})" if o16 else "-", f"{num(o16, 'frac_ref'):.3f}" if o16 else "-",
                 f"{us(oany)} ({name(oany)})" if oany else "-",
                 f"{us(fi)} ({name(fi)}, {fi['verdict']})" if fi else "-", f"{x(fi, o16)} / {x(fi, oany)}",
                 us(xqa) if xqa else "-", f"{x(xqa, o16)} / {x(xqa, oany)}"]
        print("| " + " | ".join(cells) + " |", file=out)
    return 0


def targets(csv_paths, out=sys.stdout):
    """Issue 10's targets judged on one or more results CSVs (the rows as --summary picks them): per configuration,
    the fastest PASS variant's frac_ref against 0.91, beside the frac_ref that the run's page-table-order read
    of the same pages reaches (ref_read_s / ref_read_pages_s: what a kernel that walks the pages and computes
    nothing would get; '-' where the row lacks it), ours over FlashInfer's fastest non-XQA backend against 1.5x
    (an e4m3 cache with grouped heads, Hq > Hkv) or 1.0x (the others), ours with a 16-bit-model accuracy over XQA
    against 1.0x, and the frac_ref that speed-up target takes (target x the row's read / FlashInfer's time; above
    1, "beyond the read": meeting it takes a kernel faster than the run's read reference of the same bytes); then the
    e4m3 / bf16 time of ours (16-bit model) for every configuration measured with both caches, against 0.56.
    'yes' / 'no' per target; '-' where a side was not timed."""
    rows = load_results(csv_paths)

    def ratio(theirs, ours):
        return num(theirs, "time_median_s") / num(ours, "time_median_s") if theirs and ours else math.nan

    def verdict(x, want):
        return "-" if x != x else ("yes" if x >= want else "no")

    print("| configuration | fastest PASS variant | frac_ref >= 0.91 | page-order read's frac_ref | "
          "vs FlashInfer non-XQA (16-bit / any) | target | met (16-bit / any) | frac_ref it takes | "
          "16-bit vs XQA >= 1.00x |", file=out)
    print("|---|---|---|---|---|---|---|---|---|", file=out)
    twins = {}
    for rs, o16, oany, fi, xqa in configurations(rows):
        cfg = dict(w.split("=", 1) for w in rs[0]["config_name"].split() if "=" in w)
        keep = ("B", "Hq", "Hkv", "kv", "len")
        short = " ".join(f"{k}={cfg[k]}" for k in keep if k in cfg)
        gqa_fp8 = cfg.get("kv", "").startswith("e") and cfg.get("Hq") != cfg.get("Hkv")
        want = 1.5 if gqa_fp8 else 1.0
        fr = num(oany, "frac_ref") if oany else math.nan
        pr = num(oany, "ref_read_s") / num(oany, "ref_read_pages_s") if oany else math.nan
        r16, rany, rx = ratio(fi, o16), ratio(fi, oany), ratio(xqa, o16)
        takes = want * num(oany, "ref_read_s") / num(fi, "time_median_s") if fi and oany else math.nan
        cells = [short, f"{oany['variant']}" if oany else "-", f"{fr:.3f}: {verdict(fr, 0.91)}" if fr == fr else "-",
                 f"{pr:.3f}" if pr == pr else "-", f"{r16:.2f}x / {rany:.2f}x" if fi else "-", f"{want:.1f}x",
                 f"{verdict(r16, want)} / {verdict(rany, want)}",
                 (f"{takes:.3f}" + (": beyond the read" if takes > 1.0 else "")) if takes == takes else "-",
                 f"{rx:.2f}x: {verdict(rx, 1.0)}" if rx == rx else "-"]
        print("| " + " | ".join(cells) + " |", file=out)
        twins[(cfg.get("B"), cfg.get("Hq"), cfg.get("Hkv"), cfg.get("len"), cfg.get("D"), cfg.get("kv"))] = (short, o16)
    pairs = [(k, v) for k, v in twins.items() if k[5] == "e4m3" and k[:5] + ("bf16",) in twins]
    if pairs:
        print(file=out)
        print("| configuration | e4m3 us (16-bit model) | bf16 us | e4m3 / bf16 <= 0.56 |", file=out)
        print("|---|---|---|---|", file=out)
        for k, (short, e) in pairs:
            b = twins[k[:5] + ("bf16",)][1]
            q = num(e, "time_median_s") / num(b, "time_median_s") if e and b else math.nan
            print(f"| {short.replace(' kv=e4m3', '')} | {1e6 * num(e, 'time_median_s'):.1f} | "
                  f"{1e6 * num(b, 'time_median_s'):.1f} | " + (f"{q:.3f}: {verdict(-q, -0.56)}" if q == q else "-")
                  + " |", file=out)
    return 0


# ---------------------------------------------------------------- main

def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("golden", nargs="?", help="golden file (decodelab-golden v1)")
    p.add_argument("--out-dir", help="where the candidate files go")
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated of " + ", ".join(BACKENDS))
    p.add_argument("--decodelab", default=os.environ.get("DECODELAB"),
                   help="decodelab binary, to get the golden hash quickly (default $DECODELAB)")
    p.add_argument("--golden-hash", help="the golden's input hash (fnv1a64:...), if already known")
    p.add_argument("--peak-read-gbps", type=float, help="peak read bandwidth measured on this device (for frac_peak)")
    p.add_argument("--max-time-s", type=float, default=2.0, help="time cap per backend (default 2)")
    p.add_argument("--min-samples", type=int, default=10)
    p.add_argument("--max-stdrel", type=float, default=0.005)
    p.add_argument("--no-time", action="store_true", help="check only")
    p.add_argument("--fake-o", metavar="MODEL", help="no GPU: write a candidate from the golden's MODEL output (bf16)")
    p.add_argument("--prebuild", metavar="DIR", help="no GPU: compile the JIT modules for sm_90a into DIR")
    p.add_argument("--warm", action="store_true",
                   help="GPU machine: compile into FlashInfer's JIT cache the modules its AOT dir lacks")
    p.add_argument("--dtypes", default="bf16:e4m3,bf16:bf16", help="prebuild: q:kv pairs")
    p.add_argument("--head-dim", type=int, default=128, help="prebuild: head dim")
    p.add_argument("--table", metavar="RESULTS.csv", nargs="+",
                   help="print the side-by-side markdown table of one or more results CSVs (rows of one golden file "
                        "from several files are one configuration; a later file's row of a variant replaces an "
                        "earlier file's)")
    p.add_argument("--summary", metavar="RESULTS.csv", nargs="+",
                   help="print issue 10's per-configuration summary of one or more results CSVs (read, ours, "
                        "FlashInfer, XQA; a later file's row of a variant replaces an earlier file's)")
    p.add_argument("--targets", metavar="RESULTS.csv", nargs="+",
                   help="judge issue 10's targets on one or more results CSVs (frac_ref, FlashInfer, XQA, e4m3/bf16)")
    a = p.parse_args(argv)
    if a.warm:
        a.prebuild = a.prebuild or "-"
    if a.prebuild or a.table or a.summary or a.targets:
        return a
    if not a.golden:
        p.error("GOLDEN.h5 is required")
    if not a.out_dir:
        p.error("--out-dir is required")
    a.backends = [b for b in a.backends.split(",") if b]
    for b in a.backends:
        if b not in BACKENDS:
            p.error(f"--backends: {b!r} is not one of {', '.join(BACKENDS)}")
    if a.golden_hash and not (a.golden_hash.startswith("fnv1a64:") and len(a.golden_hash) == 24):
        p.error(f"--golden-hash: {a.golden_hash!r} is not fnv1a64:<16 hex digits>")
    if a.min_samples < 1 or a.max_time_s <= 0 or a.max_stdrel <= 0:
        p.error("--min-samples, --max-time-s and --max-stdrel must be positive")
    return a


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        if args.table:
            return table(args.table)
        if args.summary:
            return summary(args.summary)
        if args.targets:
            return targets(args.targets)
        if args.prebuild:
            return prebuild(args)
        os.makedirs(args.out_dir, exist_ok=True)
        if args.fake_o:
            g = read_golden(args.golden, need_models=(args.fake_o,))
            ghash = golden_hash(g, args.decodelab, args.golden_hash)
            o, lse = g["models"][args.fake_o]
            path = os.path.join(args.out_dir, f"{stem(args.golden)}.fake-{args.fake_o}.cand.h5")
            attrs = {"producer": "fake 0", "backend": f"golden-{args.fake_o}",
                     "settings": f"the golden file's /golden/{args.fake_o} output rounded to bf16, lse in log2",
                     "model": args.fake_o if args.fake_o != "orig" else None}
            write_candidate(path, g, ghash, o.astype(np.float32), "bf16", (lse / math.log(2.0)).astype(np.float32),
                            "2", attrs)
            print(f"wrote {path}", flush=True)
            return 0
        g = read_golden(args.golden)
        if g["cfg"]["kv_dtype"] in FP8:
            per_tensor_scales(g)  # refuse early, before torch and the JIT
        ghash = golden_hash(g, args.decodelab, args.golden_hash)
        return run_backends(args, g, ghash)
    except Refused as e:
        print(f"flashinfer_decode.py: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - no GPU, no FlashInfer, a CUDA error: one line, exit 1
        first = str(e).splitlines()[0] if str(e) else ""
        print(f"flashinfer_decode.py: {args.golden}: {type(e).__name__}: {first}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
