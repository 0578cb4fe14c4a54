#!/usr/bin/env python3
"""PyTorch peer measurements for cgr-bench's workloads (bench/).

Runs on one GPU, in one process:

  mlp          W-mlp training step: x[B,1024] -> 4 x (Linear 1024->1024 + ReLU)
               -> Linear 1024->1000 -> mean cross-entropy (int64 labels; torch
               needs int64) -> backward -> AdamW(lr 1e-3, betas (0.9, 0.999),
               eps 1e-8, weight_decay 0.01, fused). The loss is read back to
               the host every step.
  mlp-dropout  the same with dropout p=0.1 after each ReLU (W-mlp's dropout
               variant; not run by default).
  cnn          W-cnn inference: x[B,3,64,64] -> conv3x3 3->64 pad 1 + bias + ReLU
               -> 6 x (conv3x3 64->64 pad 1 + bias + ReLU) -> global average
               pool -> Linear 64->10, eval mode under torch.no_grad(); the
               logits are copied back to the host every step.

Each in two modes:
  eager   the step as PyTorch users write it (AdamW(fused=True) for training).
  graph   the whole step captured once with torch.cuda.CUDAGraph (training with
          AdamW(fused=True, capturable=True)), following PyTorch's documented
          whole-network recipe: warm-up iterations on a side stream, grads set
          to None before capture, static input tensors; each step copies fresh
          pinned host inputs into the static tensors with non_blocking copies,
          replays, and copies the outputs back.

Measurement (the rules of bench/timing.h): fp32 with TF32 off. Inputs are fresh random
data from the host every step: generated on the CPU beforehand into a pool of
pinned buffers (default 64) that the steps rotate through; never zeros. After
the warm-up steps (default 50, at least 20), each of the timed steps (default
200) is timed on its own with time.perf_counter around input copy + step +
readback + synchronize; time.thread_time around the submission part (everything
but the final synchronize) gives the host CPU time. Reported: p10/p50/p90 wall
us, median host CPU us, and GPU busy us per step: the sum of kernel and memcpy
durations (CUPTI activity records through torch.profiler) over a separate
profiled block of steps, divided by its step count (null if the profiler fails).
The profiler is initialized once before any graph is captured (a known
requirement for seeing kernels of graphs captured earlier).

Example:
  python3 bench/peer/torch_peer.py --workload mlp,cnn --steps 200 --warmup 50 \\
      --json torch_peer.json
"""

import argparse
import gc
import json
import math
import os
import platform
import sys
import tempfile
import time
import traceback

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.stderr.write("torch_peer.py: PyTorch is not importable: %s\n" % exc)
    sys.exit(2)

WORKLOADS = ("mlp", "mlp-dropout", "cnn")
DEFAULT_BATCHES = {"mlp": [1, 8, 32, 256], "mlp-dropout": [1, 8, 32, 256], "cnn": [1, 8, 32]}
MODES = ("eager", "graph")

MLP_IN, MLP_HIDDEN, MLP_LAYERS, MLP_CLASSES = 1024, 1024, 4, 1000
CNN_IN_C, CNN_H, CNN_W, CNN_CH, CNN_CONVS, CNN_CLASSES = 3, 64, 64, 64, 7, 10
GRAPH_WARMUP_ITERS = 3  # side-stream iterations before capture (PyTorch's recipe uses 3)


# ---- models ---------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        dims = [MLP_IN] + [MLP_HIDDEN] * MLP_LAYERS
        self.hidden = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(MLP_LAYERS))
        self.out = nn.Linear(MLP_HIDDEN, MLP_CLASSES)
        self.p = dropout

    def forward(self, x):
        for lin in self.hidden:
            x = F.relu(lin(x))
            if self.p > 0.0:
                x = F.dropout(x, p=self.p, training=self.training)
        return self.out(x)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        convs = [nn.Conv2d(CNN_IN_C, CNN_CH, 3, padding=1)]
        convs += [nn.Conv2d(CNN_CH, CNN_CH, 3, padding=1) for _ in range(CNN_CONVS - 1)]
        self.convs = nn.ModuleList(convs)
        self.fc = nn.Linear(CNN_CH, CNN_CLASSES)

    def forward(self, x):
        for conv in self.convs:
            x = F.relu(conv(x))
        return self.fc(x.mean(dim=(2, 3)))


# ---- settings ---------------------------------------------------------------------------


def _tf32_state():
    state = {}
    for label, getter in (
        ("matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
        ("cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
        ("matmul.fp32_precision", lambda: torch.backends.cuda.matmul.fp32_precision),
        ("cudnn.conv.fp32_precision", lambda: torch.backends.cudnn.conv.fp32_precision),
        ("float32_matmul_precision", torch.get_float32_matmul_precision),
    ):
        try:
            state[label] = getter()
        except Exception:  # noqa: BLE001 - not in this release
            pass
    return state


def _tf32_on(state):
    return (state.get("matmul.allow_tf32") is True or state.get("cudnn.allow_tf32") is True
            or state.get("matmul.fp32_precision") == "tf32"
            or state.get("cudnn.conv.fp32_precision") == "tf32")


def disable_tf32():
    """Turns TF32 off for matmuls and cuDNN convolutions; returns what is in effect.

    The legacy flags (torch.backends.cuda.matmul.allow_tf32 and
    torch.backends.cudnn.allow_tf32) are set first: in the releases that also
    have the newer fp32_precision settings, their setters keep both consistent.
    The new API is used only where the legacy one is missing or did not take.
    Never raises: a failure is reported in the returned dict ("tf32_off").
    """
    notes = {}
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        notes["set_with"] = "allow_tf32"
    except Exception as exc:  # noqa: BLE001 - report, then try the new API
        notes["legacy_api_error"] = repr(exc)
    state = _tf32_state()
    if "set_with" not in notes or _tf32_on(state):
        try:
            torch.backends.cuda.matmul.fp32_precision = "ieee"
            torch.backends.cudnn.conv.fp32_precision = "ieee"
            notes["set_with"] = "fp32_precision"
        except Exception as exc:  # noqa: BLE001
            notes["new_api_error"] = repr(exc)
        state = _tf32_state()
    state.update(notes)
    state["tf32_off"] = not _tf32_on(state) and "set_with" in notes
    if not state["tf32_off"]:
        sys.stderr.write("torch_peer.py: WARNING: could not verify that TF32 is off: %r\n" % state)
    return state


def init_profiler_for_graphs(dev):
    """Starts CUPTI once before any graph capture, so that kernels of graphs
    captured later show up when profiled (pytorch/pytorch#100441)."""
    try:
        from torch.profiler._utils import _init_for_cuda_graphs

        _init_for_cuda_graphs()
        return None
    except Exception:  # noqa: BLE001 - fall back to an empty session
        pass
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]):
            torch.zeros(1, device=dev).add_(1)
            torch.cuda.synchronize(dev)
        return None
    except Exception as exc:  # noqa: BLE001
        return repr(exc)


# ---- inputs ----------------------------------------------------------------------------


def pinned_pool(n, shape, gen, kind):
    """n pinned host tensors of fresh random data: floats uniform in [-1, 1)
    with exact zeros replaced, or int64 class labels."""
    pool = []
    for _ in range(n):
        if kind == "labels":
            t = torch.randint(0, MLP_CLASSES, shape, generator=gen, dtype=torch.int64)
        else:
            t = torch.rand(shape, generator=gen, dtype=torch.float32).mul_(2.0).sub_(1.0)
            t[t == 0] = 0.5
        pool.append(t.pin_memory())
    return pool


# ---- one configuration: submit(i) enqueues step i; sync() waits for it ----------------------


class Config:
    """A set-up step: submit(i) enqueues input copy + step + readback of step i,
    sync() waits for it, check() validates the last output on the host."""

    def __init__(self, submit, sync, check, keep):
        self.submit = submit
        self.sync = sync
        self.check = check
        self.keep = keep  # objects to free afterwards (models, graphs, pools)


def stream_sync(dev):
    stream = torch.cuda.current_stream(dev)
    return stream.synchronize


def capture_whole(dev, step, before=lambda: None):
    """PyTorch's whole-network recipe: GRAPH_WARMUP_ITERS runs of step() on a
    side stream, then before() and step() captured into a CUDAGraph.
    Returns the graph and what the captured step() returned (its static
    output)."""
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):
        for _ in range(GRAPH_WARMUP_ITERS):
            before()
            step()
    torch.cuda.current_stream(dev).wait_stream(side)
    torch.cuda.synchronize(dev)
    graph = torch.cuda.CUDAGraph()
    before()
    with torch.cuda.graph(graph):
        static_out = step()
    torch.cuda.synchronize(dev)
    return graph, static_out


def setup_mlp(B, mode, dev, args, dropout):
    gen = torch.Generator().manual_seed(args.seed + B)
    xs = pinned_pool(args.pool, (B, MLP_IN), gen, "floats")
    ys = pinned_pool(args.pool, (B,), gen, "labels")
    torch.manual_seed(args.seed)
    model = MLP(dropout=dropout).to(dev)
    model.train()
    hyper = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    x_d = torch.empty((B, MLP_IN), device=dev, dtype=torch.float32)
    y_d = torch.empty((B,), device=dev, dtype=torch.int64)
    loss_h = torch.empty((), dtype=torch.float32).pin_memory()
    P = len(xs)
    sync = stream_sync(dev)

    def check():
        v = float(loss_h.item())
        if not math.isfinite(v):
            raise RuntimeError("loss is not finite: %r" % v)
        return v

    if mode == "eager":
        opt = torch.optim.AdamW(model.parameters(), fused=True, **hyper)

        def submit(i):
            x_d.copy_(xs[i % P], non_blocking=True)
            y_d.copy_(ys[i % P], non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x_d), y_d)
            loss.backward()
            opt.step()
            loss_h.copy_(loss.detach(), non_blocking=True)

        return Config(submit, sync, check, [model, opt, xs, ys])

    opt = torch.optim.AdamW(model.parameters(), fused=True, capturable=True, **hyper)
    x_d.copy_(xs[0], non_blocking=True)
    y_d.copy_(ys[0], non_blocking=True)

    def train_step():
        loss = F.cross_entropy(model(x_d), y_d)
        loss.backward()
        opt.step()
        return loss

    # The warm-up also creates the optimizer state; grads go to None before capture.
    graph, static_loss = capture_whole(dev, train_step,
                                       lambda: opt.zero_grad(set_to_none=True))

    def submit(i):
        x_d.copy_(xs[i % P], non_blocking=True)
        y_d.copy_(ys[i % P], non_blocking=True)
        graph.replay()
        loss_h.copy_(static_loss, non_blocking=True)

    return Config(submit, sync, check, [graph, model, opt, xs, ys, static_loss])


def setup_cnn(B, mode, dev, args):
    gen = torch.Generator().manual_seed(args.seed + 1000 + B)
    xs = pinned_pool(args.pool, (B, CNN_IN_C, CNN_H, CNN_W), gen, "floats")
    torch.manual_seed(args.seed)
    model = CNN().to(dev)
    model.eval()
    x_d = torch.empty((B, CNN_IN_C, CNN_H, CNN_W), device=dev, dtype=torch.float32)
    out_h = torch.empty((B, CNN_CLASSES), dtype=torch.float32).pin_memory()
    P = len(xs)
    sync = stream_sync(dev)

    def check():
        if not bool(torch.isfinite(out_h).all()):
            raise RuntimeError("logits are not finite")
        return float(out_h[0, 0])

    if mode == "eager":

        def submit(i):
            x_d.copy_(xs[i % P], non_blocking=True)
            out = model(x_d)
            out_h.copy_(out, non_blocking=True)

        return Config(submit, sync, check, [model, xs])

    x_d.copy_(xs[0], non_blocking=True)
    graph, static_out = capture_whole(dev, lambda: model(x_d))

    def submit(i):
        x_d.copy_(xs[i % P], non_blocking=True)
        graph.replay()
        out_h.copy_(static_out, non_blocking=True)

    return Config(submit, sync, check, [graph, model, xs, static_out])


# ---- measuring -----------------------------------------------------------------------------


def percentile(sorted_vals, q):
    if not sorted_vals:
        return None
    k = (len(sorted_vals) - 1) * q
    lo = int(math.floor(k))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def time_steps(cfg, first, steps):
    wall, cpu = [], []
    perf_counter, thread_time = time.perf_counter, time.thread_time
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(first, first + steps):
            t0 = perf_counter()
            c0 = thread_time()
            cfg.submit(i)
            c1 = thread_time()
            cfg.sync()
            t1 = perf_counter()
            wall.append((t1 - t0) * 1e6)
            cpu.append((c1 - c0) * 1e6)
    finally:
        if gc_was_enabled:
            gc.enable()
    return wall, cpu


def profile_busy(cfg, first, steps):
    """GPU busy us per step and kernels per step over `steps` profiled steps:
    the sum of kernel and memcpy durations from CUPTI activity records."""
    try:
        from torch.profiler import ProfilerActivity, profile

        prof = None
        first_error = None
        # CUDA activity alone keeps the profiled steps closest to the timed
        # ones; some builds insist on CPU activity too, so that is the retry.
        for activities in ([ProfilerActivity.CUDA], [ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            try:
                with profile(activities=activities) as prof:
                    for i in range(first, first + steps):
                        cfg.submit(i)
                        cfg.sync()
                break
            except Exception as exc:  # noqa: BLE001 - try the next activity set
                prof = None
                first_error = first_error or exc
        if prof is None:
            raise first_error
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            with open(path, "r", encoding="utf-8") as f:
                trace = json.load(f)
        events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
        busy, kernels, memcpys = 0.0, 0, 0
        for ev in events:
            if not isinstance(ev, dict) or ev.get("ph") != "X":
                continue
            cat = str(ev.get("cat", "")).lower()
            if cat == "kernel":
                busy += float(ev.get("dur", 0.0))
                kernels += 1
            elif cat == "gpu_memcpy":
                busy += float(ev.get("dur", 0.0))
                memcpys += 1
        if kernels == 0:
            return None, None, None, "profiler recorded no kernels"
        return busy / steps, kernels / steps, memcpys / steps, None
    except Exception as exc:  # noqa: BLE001 - the profiler is optional
        return None, None, None, repr(exc)


def run_one(workload, B, mode, dev, args):
    if workload == "cnn":
        with torch.no_grad():
            return _run_one(lambda: setup_cnn(B, mode, dev, args), workload, B, mode, args)
    dropout = 0.1 if workload == "mlp-dropout" else 0.0
    return _run_one(lambda: setup_mlp(B, mode, dev, args, dropout), workload, B, mode, args)


def _run_one(make, workload, B, mode, args):
    cfg = make()
    i = 0
    for _ in range(args.warmup):
        cfg.submit(i)
        cfg.sync()
        i += 1
    cfg.check()
    wall, cpu = time_steps(cfg, i, args.steps)
    i += args.steps
    last = cfg.check()
    busy = kernels = memcpys = None
    prof_error = "disabled (--no-profile)"
    if not args.no_profile:
        busy, kernels, memcpys, prof_error = profile_busy(cfg, i, args.profile_steps)
        cfg.check()
    wall.sort()
    cpu.sort()
    p50 = percentile(wall, 0.5)
    res = {
        "workload": workload,
        "B": B,
        "mode": mode,
        "wall_us": {
            "p10": percentile(wall, 0.1),
            "p50": p50,
            "p90": percentile(wall, 0.9),
            "min": wall[0],
            "mean": sum(wall) / len(wall),
        },
        "cpu_us": percentile(cpu, 0.5),
        "cpu_us_p90": percentile(cpu, 0.9),
        "busy_us": busy,
        "kernels_per_step": kernels,
        "memcpys_per_step": memcpys,
        "overhead": (p50 / busy) if busy else None,
        "steps": args.steps,
        "warmup": args.warmup,
        "last_output": last,
    }
    if prof_error:
        res["profiler_error"] = prof_error
    del cfg
    return res


# ---- output --------------------------------------------------------------------------------


def fmt(v, width=9, prec=1):
    if v is None:
        return "-".rjust(width)
    return ("%.*f" % (prec, v)).rjust(width)


def print_table(results, out=sys.stdout):
    head = "%-12s %5s %-6s %9s %9s %9s %9s %9s %8s %8s" % (
        "workload", "B", "mode", "wall p50", "p10", "p90", "cpu p50", "busy", "kern/st", "wall/bus")
    out.write(head + "\n" + "-" * len(head) + "\n")
    for r in results:
        if "error" in r:
            out.write("%-12s %5s %-6s  ERROR: %s\n" % (r["workload"], r["B"], r["mode"], r["error"]))
            continue
        w = r["wall_us"]
        out.write("%-12s %5d %-6s %s %s %s %s %s %s %s\n" % (
            r["workload"], r["B"], r["mode"], fmt(w["p50"]), fmt(w["p10"]), fmt(w["p90"]),
            fmt(r["cpu_us"]), fmt(r["busy_us"]), fmt(r["kernels_per_step"], 8),
            fmt(r["overhead"], 8, 2)))
    # eager / graph per workload and B
    by = {}
    for r in results:
        if "error" not in r:
            by[(r["workload"], r["B"], r["mode"])] = r
    lines = []
    for (wl, B, mode), r in sorted(by.items()):
        if mode != "graph":
            continue
        e = by.get((wl, B, "eager"))
        if e:
            lines.append("  %-12s B=%-4d eager/graph wall p50 = %.2fx" % (
                wl, B, e["wall_us"]["p50"] / r["wall_us"]["p50"]))
    if lines:
        out.write("\n" + "\n".join(lines) + "\n")


def _safe(fn):
    """fn(), or None if it raises (metadata only)."""
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return None


def parse_list(text, conv, what):
    try:
        vals = [conv(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit("torch_peer.py: bad %s list %r" % (what, text))
    if not vals:
        raise SystemExit("torch_peer.py: empty %s list" % what)
    return vals


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="mlp,cnn",
                    help="comma list of %s (default mlp,cnn)" % ",".join(WORKLOADS))
    ap.add_argument("--batches", default=None,
                    help="comma list of batch sizes for every workload (default: mlp 1,8,32,256; "
                         "cnn 1,8,32)")
    ap.add_argument("--mlp-batches", default=None, help="batch sizes for mlp and mlp-dropout")
    ap.add_argument("--cnn-batches", default=None, help="batch sizes for cnn")
    ap.add_argument("--modes", default="eager,graph", help="comma list of eager,graph")
    ap.add_argument("--steps", type=int, default=200, help="timed steps per configuration (>= 200)")
    ap.add_argument("--warmup", type=int, default=50, help="warm-up steps (>= 20)")
    ap.add_argument("--profile-steps", type=int, default=50, help="steps in the profiled block")
    ap.add_argument("--no-profile", action="store_true", help="skip the GPU busy measurement")
    ap.add_argument("--pool", type=int, default=64, help="pinned input buffers to rotate through")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True (default off: heuristics, like cgr)")
    ap.add_argument("--json", default=None, help="write results to this file")
    args = ap.parse_args(argv)

    workloads = parse_list(args.workload, str, "workload")
    for wl in workloads:
        if wl not in WORKLOADS:
            raise SystemExit("torch_peer.py: unknown workload %r (choose from %s)"
                             % (wl, ", ".join(WORKLOADS)))
    modes = parse_list(args.modes, str, "mode")
    for m in modes:
        if m not in MODES:
            raise SystemExit("torch_peer.py: unknown mode %r (choose from eager, graph)" % m)
    batches = {}
    for wl in workloads:
        text = args.batches
        if wl.startswith("mlp") and args.mlp_batches:
            text = args.mlp_batches
        if wl == "cnn" and args.cnn_batches:
            text = args.cnn_batches
        batches[wl] = parse_list(text, int, "batch") if text else list(DEFAULT_BATCHES[wl])
        if any(b < 1 for b in batches[wl]):
            raise SystemExit("torch_peer.py: batch sizes must be >= 1")
    if args.steps < 1 or args.warmup < 0 or args.pool < 1 or args.profile_steps < 1:
        raise SystemExit("torch_peer.py: --steps, --pool and --profile-steps must be >= 1, "
                         "--warmup >= 0")
    if args.steps < 200 or args.warmup < 20:
        sys.stderr.write("torch_peer.py: warning: cgr-bench measures with at least 20 warm-up "
                         "and 200 timed steps (got %d and %d)\n" % (args.warmup, args.steps))

    if not torch.cuda.is_available():
        sys.stderr.write("torch_peer.py: no usable CUDA device (torch.cuda.is_available() is "
                         "False); nothing measured\n")
        return 2
    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    tf32 = disable_tf32()
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    prof_init_error = None if args.no_profile else init_profiler_for_graphs(dev)

    meta = {
        "tool": "torch_peer.py",
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": _safe(torch.backends.cudnn.version),
        "device": _safe(lambda: torch.cuda.get_device_name(dev)),
        "host": platform.node(),
        "python": platform.python_version(),
        "tf32": tf32,
        "cudnn_benchmark": bool(args.cudnn_benchmark),
        "steps": args.steps,
        "warmup": args.warmup,
        "profile_steps": None if args.no_profile else args.profile_steps,
        "pool": args.pool,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if prof_init_error:
        meta["profiler_init_error"] = prof_init_error
    print("torch %s, CUDA %s, cuDNN %s, %s; TF32 off (%s)" % (
        meta["torch_version"], meta["cuda_version"], meta["cudnn_version"], meta["device"],
        tf32.get("set_with")))

    results = []
    failures = 0
    for wl in workloads:
        for B in batches[wl]:
            for mode in modes:
                t0 = time.perf_counter()
                try:
                    r = run_one(wl, B, mode, dev, args)
                    print("  %-12s B=%-4d %-6s wall p50 %9.1f us  cpu %8.1f us  busy %s  (%.1f s)"
                          % (wl, B, mode, r["wall_us"]["p50"], r["cpu_us"],
                             "%.1f us" % r["busy_us"] if r["busy_us"] else "n/a",
                             time.perf_counter() - t0), flush=True)
                except Exception as exc:  # noqa: BLE001 - record and go on
                    failures += 1
                    msg = "%s: %s" % (type(exc).__name__, exc)
                    r = {"workload": wl, "B": B, "mode": mode, "error": msg}
                    sys.stderr.write("torch_peer.py: %s B=%d %s failed: %s\n" % (wl, B, mode, msg))
                    traceback.print_exc(file=sys.stderr)
                results.append(r)
                gc.collect()
                try:
                    torch.cuda.synchronize(dev)
                    torch.cuda.empty_cache()
                except Exception:  # noqa: BLE001 - a broken context shows in later errors
                    pass

    print()
    print_table(results)
    doc = dict(meta)
    doc["results"] = results
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print("wrote %s" % args.json)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
