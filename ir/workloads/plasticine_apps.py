"""The 13 applications of seed 004 Table 3.1 (L326–343) as virtual-block dataflow graphs.

Each builder takes the parallelization factor ``par`` (the outer unrolling of the innermost pipelined
loop: ``par`` copies of the loop body, each on a 16-lane vector, L145 / Fig 2.1) and returns a VBDFG
(conventions in :mod:`~solvermap.ir.workloads.plasticine_vbdfg`): one actor per innermost-loop body,
memories with virtual banks and their request/response accessors, DRAM streams and the 1-bit tokens of
the p2p scheme where accesses to a shared memory must be ordered (§4.2).

Data sizes are Table 3.1's. Loop bodies follow the standard algorithms (the seed lists only the
names); op counts per body and the tile sizes are our choice and are stated in each docstring.
Low-precision LSTM/GRU weights use the 4-float8 packing of §3.2.1 (L233) so that they fit on chip.
"""

from __future__ import annotations

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph
from solvermap.ir.workloads import Param, register
from solvermap.ir.workloads.plasticine_vbdfg import LANES, Actor, AppBuilder, Value

FAMILY = "plasticine"


def _par(default: int, limit: int) -> Param:
    return Param(default, "parallelization factor: copies of the inner body (the app's own limit)", 1, limit)


def _check_par(par: int, limit: int) -> int:
    if not isinstance(par, int) or par < 1 or par > limit:
        raise InputError("", "workload.par", f"must be an integer in [1, {limit}], got {par!r}")
    return par


def _mac_tree(actor: Actor, products: list[Value]) -> Value:
    return actor.tree("add", products)


# ---------------------------------------------------------------------- DRAM-bound streaming apps


@register("dotproduct", FAMILY, "inner product of two 1048576-element vectors (Table 3.1)", params={"par": _par(4, 16)})
def dotproduct(par: int = 4, n: int = 1048576) -> DataflowGraph:
    """par copies of (a·b, lane reduce) from 2·par DRAM streams, an adder tree, one accumulator.
    (par > 8 needs more than the 16 DAGs of the base target; merging then reports it.)"""
    _check_par(par, 16)
    app = AppBuilder("dotproduct", par, str(n))
    body = app.actor("dot", n // (LANES * par), loop="i")
    partial = []
    for k in range(par):
        a = app.dram_load(f"a{k}", n // par)
        b = app.dram_load(f"b{k}", n // par)
        partial.append(body.op("reduce", body.op("mul", a, b)))
    total = body.accumulate("add", _mac_tree(body, partial))
    app.host_out("result", total)
    return app.finish()


@register("outerproduct", FAMILY, "outer product of two 1024-element vectors (Table 3.1)", params={"par": _par(4, 8)})
def outerproduct(par: int = 4, n: int = 1024) -> DataflowGraph:
    """Vectors a, b loaded into SRAMs; par copies of c[i, j:j+16] = a[i]·b[j:j+16] streamed to DRAM."""
    _check_par(par, 8)
    app = AppBuilder("outerproduct", par, str(n))
    a_mem, b_mem = app.sram("a_sram", n), app.sram("b_sram", n)
    load_a = app.actor("load_a", n // LANES, loop="i")
    done_a = app.write(a_mem, load_a, load_a.op("mov", app.dram_load("a", n)))
    load_b = app.actor("load_b", n // LANES, loop="j")
    done_b = app.write(b_mem, load_b, load_b.op("mov", app.dram_load("b", n)))
    body = app.actor("outer", n * n // (LANES * par), loop="i,j")
    ai = app.read(a_mem, body, vector=False, firings=n, after=done_a)
    for k in range(par):
        bj = app.read(b_mem, body, after=done_b, access="b")
        prod = body.op("mul", ai, bj)
        app.dram_store(f"c{k}", prod, n * n // par)
    return app.finish()


def _cndf(body: Actor, x: Value) -> Value:
    """Cumulative normal distribution (Abramowitz–Stegun polynomial): 15 operations."""
    sign = body.op("lt", x, 0.0)
    xa = body.op("abs", x)
    sq = body.op("mul", xa, xa)
    expv = body.op("exp", body.op("mul", sq, -0.5))
    nprime = body.op("mul", expv, 0.3989422804)
    k = body.op("div", 1.0, body.op("fma", xa, 0.2316419))
    poly = body.op("fma", k, 1.330274429)
    for coeff in (-1.821255978, 1.781477937, -0.356563782):
        poly = body.op("fma", body.op("mul", poly, k), coeff)
    poly = body.op("mul", poly, k)
    n = body.op("sub", 1.0, body.op("mul", nprime, poly))
    return body.op("mux", sign, body.op("sub", 1.0, n), n)


@register("blackscholes", FAMILY, "Black-Scholes option pricing on 1048576 options (Table 3.1)", params={"par": _par(1, 4)})
def blackscholes(par: int = 1, n: int = 1048576) -> DataflowGraph:
    """par copies of the pricing body (6 unpacks of an option record + 49 ops); the options are an array
    of 6-word records, one DRAM stream per copy in and one out."""
    _check_par(par, 4)
    app = AppBuilder("blackscholes", par, str(n))
    body = app.actor("price", n // (LANES * par), loop="i")
    for k in range(par):
        records = app.dram_load(f"options{k}", 6 * n // par)
        spot, strike, rate, vol, time, otype = (body.op("unpack", records, label=f"unpack_{f}")
                                                for f in ("spot", "strike", "rate", "vol", "time", "otype"))
        log_term = body.op("log", body.op("div", spot, strike))
        power = body.op("mul", body.op("mul", vol, vol), 0.5)
        num = body.op("add", body.op("mul", body.op("add", rate, power), time), log_term)
        den = body.op("mul", vol, body.op("sqrt", time))
        d1 = body.op("div", num, den)
        d2 = body.op("sub", d1, den)
        nd1, nd2 = _cndf(body, d1), _cndf(body, d2)
        future = body.op("mul", strike, body.op("exp", body.op("mul", body.op("neg", rate), time)))
        call = body.op("sub", body.op("mul", spot, nd1), body.op("mul", future, nd2))
        put = body.op("sub", body.op("mul", future, body.op("sub", 1.0, nd2)),
                      body.op("mul", spot, body.op("sub", 1.0, nd1)))
        app.dram_store(f"price{k}", body.op("mux", otype, put, call), n // par)
    return app.finish()


@register("tpchq6", FAMILY, "TPC-H query 6 over 1048576 line items (Table 3.1)", params={"par": _par(2, 4)})
def tpchq6(par: int = 2, n: int = 1048576) -> DataflowGraph:
    """Filter (5 compares, 4 ands) and masked revenue sum; par copies, tree, accumulator."""
    _check_par(par, 4)
    app = AppBuilder("tpchq6", par, str(n))
    body = app.actor("filter", n // (LANES * par), loop="i")
    partial = []
    for k in range(par):
        date, disc, qty, price = (app.dram_load(f"{f}{k}", n // par) for f in ("date", "discount", "quantity", "price"))
        ok = body.tree("and", [body.op("ge", date, 19940101.0), body.op("lt", date, 19950101.0),
                               body.op("ge", disc, 0.05), body.op("le", disc, 0.07), body.op("lt", qty, 24.0)])
        revenue = body.op("mux", ok, body.op("mul", price, disc), 0.0)
        partial.append(body.op("reduce", revenue))
    app.host_out("revenue", body.accumulate("add", _mac_tree(body, partial)))
    return app.finish()


# ---------------------------------------------------------------------- compute-bound apps


@register("lattice", FAMILY, "lattice regression (2^4-vertex lattice) on 1048576 samples (Table 3.1)",
          params={"par": _par(1, 3)})
def lattice(par: int = 1, n: int = 1048576, dims: int = 4) -> DataflowGraph:
    """Multilinear interpolation: 4 complements, 28-mul weight tree, 16 weighted params, 15-add tree."""
    _check_par(par, 3)
    app = AppBuilder("lattice", par, str(n))
    body = app.actor("interp", n // (LANES * par), loop="i")
    for k in range(par):
        xs = [app.dram_load(f"x{d}_{k}", n // par) for d in range(dims)]
        comp = [body.op("sub", 1.0, x) for x in xs]
        weights = [xs[0], comp[0]]
        for d in range(1, dims):
            weights = [body.op("mul", w, f) for w in weights for f in (xs[d], comp[d])]
        terms = [body.op("mul", w, 0.5 + v / 32) for v, w in enumerate(weights)]
        app.dram_store(f"y{k}", _mac_tree(body, terms), n // par)
    return app.finish()


@register("gda", FAMILY, "Gaussian discriminant analysis, 1024 samples x 127 features (Table 3.1)", params={"par": _par(2, 32)})
def gda(par: int = 2, rows: int = 1024, cols: int = 127) -> DataflowGraph:
    """sub = x_r − μ_{y_r} into an SRAM, then sigma[i, :] += sub[i]·sub (par rows of sigma at a time, up to 32
    of its 128)."""
    _check_par(par, 32)
    c = -(-cols // LANES) * LANES  # padded to whole vectors
    app = AppBuilder("gda", par, f"{cols}x{rows}")
    x_mem = app.sram("x_tile", c, buffers=2)
    mu0, mu1 = app.sram("mu0", c), app.sram("mu1", c)
    sub_mem = app.sram("sub", c, buffers=2)
    sigma = app.sram("sigma", c * c)
    load = app.actor("load_x", rows * c // LANES, loop="r,c")
    done_x = app.write(x_mem, load, load.op("mov", app.dram_load("x", rows * c)))
    y = app.dram_load("y", rows, vector=False)
    diff = app.actor("center", rows * c // LANES, loop="r,c")
    label = diff.op("mov", y, vector=False)
    xv = app.read(x_mem, diff, after=done_x)
    m0, m1 = app.read(mu0, diff), app.read(mu1, diff)
    done_sub = app.write(sub_mem, diff, diff.op("sub", xv, diff.op("mux", label, m1, m0)))
    acc = app.actor("outer", rows * c * c // (LANES * par), loop="r,i,j")
    subj = app.read(sub_mem, acc, after=done_sub)  # one vector, broadcast to the par rows
    for k in range(par):
        subi = app.read(sub_mem, acc, vector=False, firings=rows * c // par, access="sub_i")
        old = app.read(sigma, acc, access="sigma_old")
        app.write(sigma, acc, acc.op("add", old, acc.op("mul", subi, subj)), access="sigma_new")
    store = app.actor("store_sigma", c * c // LANES, loop="i,j")
    app.dram_store("sigma_out", store.op("mov", app.read(sigma, store)), c * c)
    return app.finish()


@register("gemm", FAMILY, "general matrix multiply 256x256x256 (Table 3.1)", params={"par": _par(4, 64)})
def gemm(par: int = 4, n: int = 256, tile: int = 64) -> DataflowGraph:
    """Tiled C += A·B: for k, i (par rows, up to the tile's 64), j vector: C[i, j] += A[i, k]·B[k, j]; B row
    broadcast."""
    _check_par(par, 64)
    app = AppBuilder("gemm", par, f"{n}x{n}x{n}")
    a_mem, b_mem = app.sram("a_tile", tile * tile, buffers=2), app.sram("b_tile", tile * tile, buffers=2)
    c_mem = app.sram("c_tile", tile * tile)
    tiles = (n // tile) ** 3
    load_a = app.actor("load_a", tiles * tile * tile // LANES, loop="tile")
    done_a = app.write(a_mem, load_a, load_a.op("mov", app.dram_load("a", tiles * tile * tile)))
    load_b = app.actor("load_b", tiles * tile * tile // LANES, loop="tile")
    done_b = app.write(b_mem, load_b, load_b.op("mov", app.dram_load("b", tiles * tile * tile)))
    mac = app.actor("mac", tiles * tile ** 3 // (LANES * par), loop="tile,k,i,j")
    bk = app.read(b_mem, mac, after=done_b)
    for k in range(par):
        aik = app.read(a_mem, mac, vector=False, firings=tiles * tile * tile // par, after=done_a, access="a")
        old = app.read(c_mem, mac, access="c_old")
        app.write(c_mem, mac, mac.op("add", old, mac.op("mul", aik, bk)), access="c_new")
    store = app.actor("store_c", (n // tile) ** 2 * tile * tile // LANES, loop="tile")
    app.dram_store("c", store.op("mov", app.read(c_mem, store)), n * n)
    return app.finish()


@register("kmeans", FAMILY, "k-means, k=64, dim=64, n=8192, 2 iterations (Table 3.1)", params={"par": _par(2, 8)})
def kmeans(par: int = 2, k: int = 64, dim: int = 64, n: int = 8192, iters: int = 2) -> DataflowGraph:
    """Distances to par centroids at a time (4 vectors per point), min/argmin, centroid update."""
    _check_par(par, 8)
    vecs = dim // LANES
    app = AppBuilder("kmeans", par, f"k={k}, dim={dim}, n={n}, iter={iters}")
    pts = app.sram("points", 1024 * dim, buffers=2)
    cents = app.sram("centroids", k * dim)
    sums = app.sram("new_centroids", k * dim)
    load = app.actor("load_points", iters * n * dim // LANES, loop="iter,tile")
    done_p = app.write(pts, load, load.op("mov", app.dram_load("points_in", iters * n * dim)))
    dist = app.actor("distance", iters * n * k // par, loop="iter,p,c")
    xs = [app.read(pts, dist, firings=iters * n, after=done_p, access="x") for v in range(vecs)]
    best = []
    for c in range(par):
        sq = []
        for v in range(vecs):
            cv = app.read(cents, dist, access="centroid")
            diff = dist.op("sub", xs[v], cv)
            sq.append(dist.op("mul", diff, diff))
        best.append(dist.op("reduce", dist.tree("add", sq)))
    nearest = dist.accumulate("min", dist.tree("min", best), label="argmin")
    upd = app.actor("update", iters * n * vecs, loop="iter,p,v")
    xv = app.read(pts, upd)
    old = app.read(sums, upd)
    sel = upd.op("addr", nearest, vector=False, integer=True)
    done_u = app.write(sums, upd, upd.op("add", old, upd.op("mux", sel, xv, 0.0)))
    avg = app.actor("average", iters * k * vecs, loop="iter,c,v")
    total = app.read(sums, avg, after=done_u)
    done_c = app.write(cents, avg, avg.op("div", total, float(n // k)))
    app.token(done_c, dist, per=iters, loop_carried=True, init_tokens=1)  # next iteration reads the new centroids
    app.dram_store("centroids_out", avg.op("mov", total), iters * k * dim)
    return app.finish()


@register("logreg", FAMILY, "logistic regression, 8192 x 128, 4 iterations (Table 3.1)", params={"par": _par(4, 8)})
def logreg(par: int = 4, n: int = 8192, dim: int = 128, iters: int = 4) -> DataflowGraph:
    """dot(x, w) over dim/16 vectors (par at a time), sigmoid, gradient x·(y − σ), weight update."""
    _check_par(par, 8)
    vecs = dim // LANES
    app = AppBuilder("logreg", par, f"{n}x{dim}, iter={iters}")
    x_mem = app.sram("x_tile", 512 * dim, buffers=2)
    w_mem = app.sram("weights", dim)
    g_mem = app.sram("gradient", dim)
    load = app.actor("load_x", iters * n * dim // LANES, loop="iter,tile")
    done_x = app.write(x_mem, load, load.op("mov", app.dram_load("x", iters * n * dim)))
    y = app.dram_load("y", iters * n, vector=False)
    dot = app.actor("dot", iters * n * vecs // par, loop="iter,s,v")
    parts = []
    for k in range(par):
        parts.append(dot.op("reduce", dot.op("mul", app.read(x_mem, dot, after=done_x, access="x"),
                                             app.read(w_mem, dot, access="w"))))
    margin = dot.accumulate("add", dot.tree("add", parts))
    sig = app.actor("sigmoid", iters * n, loop="iter,s")
    e = sig.op("exp", sig.op("neg", margin))
    err = sig.op("sub", sig.op("mov", y), sig.op("div", 1.0, sig.op("add", e, 1.0)))
    grad = app.actor("gradient", iters * n * vecs // par, loop="iter,s,v")
    done_g = None
    for k in range(par):
        xv = app.read(x_mem, grad, access="x_grad")
        old = app.read(g_mem, grad, access="g_old")
        done_g = app.write(g_mem, grad, grad.op("add", old, grad.op("mul", xv, err)), access="g_new")
    upd = app.actor("update", iters * vecs, loop="iter,v")
    new = upd.op("add", app.read(w_mem, upd), upd.op("mul", app.read(g_mem, upd, after=done_g), 0.01))
    done_w = app.write(w_mem, upd, new)
    app.token(done_w, dot, per=iters, loop_carried=True, init_tokens=1)  # next iteration reads the new weights
    app.dram_store("w_out", upd.op("mov", new), iters * dim)
    return app.finish()


@register("sgd", FAMILY, "single-layer SGD, 16384 x 64, 10 epochs (Table 3.1)", params={"par": _par(4, 4)})
def sgd(par: int = 4, n: int = 16384, dim: int = 64, epochs: int = 10) -> DataflowGraph:
    """Per sample: dot(x, w) over dim/16 vectors (par at a time), error, w += α·err·x (loop-carried w)."""
    _check_par(par, 4)
    vecs = dim // LANES
    app = AppBuilder("sgd", par, f"{n}x{dim}, epoch={epochs}")
    x_mem = app.sram("x_tile", 1024 * dim, buffers=2)
    w_mem = app.sram("weights", dim)
    load = app.actor("load_x", epochs * n * dim // LANES, loop="epoch,tile")
    done_x = app.write(x_mem, load, load.op("mov", app.dram_load("x", epochs * n * dim)))
    y = app.dram_load("y", epochs * n, vector=False)
    dot = app.actor("dot", epochs * n * vecs // par, loop="epoch,s,v")
    parts = [dot.op("reduce", dot.op("mul", app.read(x_mem, dot, after=done_x, access="x"),
                                     app.read(w_mem, dot, access="w"))) for k in range(par)]
    pred = dot.accumulate("add", dot.tree("add", parts))
    err = app.actor("error", epochs * n, loop="epoch,s")
    step = err.op("mul", err.op("sub", err.op("mov", y), pred), 0.001)
    upd = app.actor("update", epochs * n * vecs // par, loop="epoch,s,v")
    done = None
    for k in range(par):
        xv = app.read(x_mem, upd, access="x_update")
        done = app.write(w_mem, upd, upd.op("add", app.read(w_mem, upd, access="w_old"), upd.op("mul", xv, step)),
                         access="w_new")
    app.token(done, dot, per=epochs * n, loop_carried=True, init_tokens=1)  # sample s+1 reads the updated weights
    store = app.actor("store_w", dim // LANES, loop="v")
    app.dram_store("w_out", store.op("mov", app.read(w_mem, store, after=done)), dim)
    return app.finish()


# ---------------------------------------------------------------------- on-chip-memory-bound apps


def _sigmoid(body: Actor, x: Value) -> Value:
    return body.op("div", 1.0, body.op("add", body.op("exp", body.op("neg", x)), 1.0))


def _tanh(body: Actor, x: Value) -> Value:
    e = body.op("exp", body.op("mul", x, -2.0))
    return body.op("div", body.op("sub", 1.0, e), body.op("add", 1.0, e))


def _rnn(name: str, gates: int, par: int, hidden: int, steps: int) -> DataflowGraph:
    """Shared LSTM/GRU structure: one MVM actor per gate over [x; h] (weights on chip, sharded by memory
    decomposition), then the element-wise cell actor."""
    _check_par(par, 8)
    app = AppBuilder(name, par, f"1 layer, {hidden} hidden, {steps} steps")
    inputs = 2 * hidden
    packed = inputs // 4  # 4-float8 packing (L233): four weights per 32-bit word
    weights = [app.sram(f"w_{g}", hidden * packed, banks=LANES) for g in range(gates)]
    xh = app.sram("xh", inputs, buffers=2)
    c_mem = app.sram("cell", hidden)
    load_w = app.actor("load_w", gates * hidden * packed // LANES, loop="g,row")
    done_w = None
    wstream = app.dram_load("weights_in", gates * hidden * packed)
    for g in range(gates):
        done_w = app.write(weights[g], load_w, load_w.op("mov", wstream))
    load_x = app.actor("load_x", steps * hidden // LANES, loop="t")
    done_x = app.write(xh, load_x, load_x.op("mov", app.dram_load("x_in", steps * hidden)))
    rows = steps * hidden * (packed // LANES) // par
    mvms = [app.actor(f"mvm_{g}", rows, loop="t,row,v") for g in range(gates)]  # one inner loop per gate
    xv = app.read(xh, mvms[0], after=done_x)  # one access, its response broadcast to every gate
    acts = []
    for g, mvm in enumerate(mvms):
        parts = []
        for k in range(par):
            w = app.read(weights[g], mvm, after=done_w, access="w")
            parts.append(mvm.op("reduce", mvm.op("dot4", w, xv)))  # 4-float8 multiply + 2 rearranges (L240)
        acts.append(mvm.accumulate("add", mvm.tree("add", parts)))
    cell = app.actor("cell", steps * hidden, loop="t,row")
    c_old = app.read(c_mem, cell, vector=False)
    if name == "lstm":
        i, f, o = (_sigmoid(cell, a) for a in acts[:3])
        g_act = _tanh(cell, acts[3])
        c_new = cell.op("add", cell.op("mul", f, c_old), cell.op("mul", i, g_act))
        h = cell.op("mul", o, _tanh(cell, c_new))
        app.write(c_mem, cell, c_new)
    else:  # gru
        r, z = _sigmoid(cell, acts[0]), _sigmoid(cell, acts[1])
        n_act = _tanh(cell, cell.op("mul", r, acts[2]))
        h = cell.op("add", cell.op("mul", cell.op("sub", 1.0, z), n_act), cell.op("mul", z, c_old))
        app.write(c_mem, cell, h)
    done_h = app.write(xh, cell, h)
    for mvm in mvms:
        app.token(done_h, mvm, per=steps, loop_carried=True, init_tokens=1)  # step t+1 reads h_t (LCD, L535)
    app.dram_store("h_out", h, steps * hidden)
    return app.finish()


@register("lstm", FAMILY, "LSTM, 1 layer, 1024 hidden units, 10 time steps (Table 3.1)", params={"par": _par(2, 8)})
def lstm(par: int = 2, hidden: int = 1024, steps: int = 10) -> DataflowGraph:
    """4 gate MVMs (8-bit packed weights, 8 MiB) and the element-wise cell: σ, tanh, c and h update."""
    return _rnn("lstm", 4, par, hidden, steps)


@register("gru", FAMILY, "GRU, 1 layer, 1024 hidden units, 10 time steps (Table 3.1)", params={"par": _par(2, 8)})
def gru(par: int = 2, hidden: int = 1024, steps: int = 10) -> DataflowGraph:
    """3 gate MVMs (8-bit packed weights, 6 MiB) and the element-wise update h = (1−z)·n + z·h."""
    return _rnn("gru", 3, par, hidden, steps)


@register("lenet", FAMILY, "LeNet-5 CNN on one 32x32 image (Table 3.1)", params={"par": _par(2, 8)})
def lenet(par: int = 2) -> DataflowGraph:
    """conv 5x5 (1→6) · pool · conv 5x5 (6→16) · pool · fc 400→120 → 84 → 10; feature maps in SRAMs,
    each layer's MAC body unrolled par ways over kernel taps, vectorized over 16 output channels/units."""
    _check_par(par, 8)
    app = AppBuilder("lenet", par, "1 image")
    layers = [  # name, output elements, inputs per output (taps), input words, weight words
        ("conv1", 6 * 28 * 28, 25, 32 * 32, 6 * 25),
        ("conv2", 16 * 10 * 10, 150, 6 * 14 * 14, 16 * 150),
        ("fc1", 120, 400, 400, 400 * 120),
        ("fc2", 84, 120, 120, 120 * 84),
        ("fc3", 10, 84, 84, 84 * 10),
    ]
    image = app.sram("image", 32 * 32)
    load = app.actor("load_image", 32 * 32 // LANES, loop="px")
    done = app.write(image, load, load.op("mov", app.dram_load("image_in", 32 * 32)))
    fmap = image
    for name, outs, taps, in_words, w_words in layers:
        wmem = app.sram(f"{name}_w", w_words)
        lw = app.actor(f"load_{name}_w", max(1, w_words // LANES), loop="w")
        done_w = app.write(wmem, lw, lw.op("mov", app.dram_load(f"{name}_w_in", w_words)))
        firings = max(1, outs * taps // (LANES * par))
        mac = app.actor(name, firings, loop="o,tap")
        prods = []
        for k in range(par):
            x = app.read(fmap, mac, after=done, access="x")
            w = app.read(wmem, mac, after=done_w, access="w")
            prods.append(mac.op("mul", x, w))
        acc = mac.accumulate("add", mac.tree("add", prods))
        act = app.actor(f"{name}_act", max(1, outs // LANES), loop="o")
        y = act.op("max", act.op("add", acc, 0.01), 0.0)  # bias + ReLU
        if name.startswith("conv"):  # 2x2 max pooling folds into the activation actor
            y = act.op("max", y, act.op("mov", y))
        out = app.sram(f"{name}_out", max(LANES, outs // (4 if name.startswith("conv") else 1)))
        done = app.write(out, act, y)
        fmap = out
    tail = app.actor("store", 1, loop="out")
    app.dram_store("scores", tail.op("mov", app.read(fmap, tail, after=done)), LANES)
    return app.finish()


APPS = ("dotproduct", "outerproduct", "blackscholes", "tpchq6", "lattice", "gda", "gemm", "kmeans", "logreg",
        "sgd", "lstm", "gru", "lenet")
