"""The authors' notebook models written plainly in NumPy, from the spec alone (``experiments.md``):
explicit token sequences, one-hot positions, the notebooks' ``Linear`` weights (``y = W x``), a
softmax over the ``seq_len - 1`` input positions, cross-entropy over the 50 logits, hand-written
backward passes (checked against central differences by the tests that use them).  Nothing here
imports the package: the tests set the package's numbers beside these (importable because pytest
puts ``tests/`` on ``sys.path``, as for ``_stats``).

Weights: ``Lq``, ``Lk`` (factorized attention: score ``(Lq x_q) . (Lk x_v) / sqrt(50)``) or ``Lqk``
(collapsed: score ``(Lqk x_v)[q] / sqrt(50)``, the raw one-hot query); ``Lv``, ``Lo`` (factorized
output: logits ``Lo Lv c``) or ``Lo`` alone (collapsed: ``Lo c``).
"""
import numpy as np

V = 50
QUERY_TOKENS = (5, 6, 7, 8)
LABEL_TOKENS = (1, 2, 3, 4)


def class_weights(k):
    """``w[0:10] = 1; w[10(k+1) : 10(k+1)+10] = 0.1 .. 1.0`` (sum 15.5)."""
    w = np.zeros(V)
    w[:10] = 1.0
    w[10 * (k + 1):10 * (k + 2)] = np.arange(1, 11) / 10
    return w


#: Each class's 155 equally likely tickets (a weight of j tenths owns j tickets).
TICKET_TABLE = [np.repeat(np.arange(V), np.rint(10 * class_weights(k)).astype(int)) for k in range(4)]


def sequences(classes, tickets, swapped=False):
    """Full token sequences ``(B, L)``: the context of the tickets, then query and label (Figure 2)
    or label and query (``swapped``, Figure 3)."""
    ctx = np.stack([TICKET_TABLE[c][t] for c, t in zip(classes, tickets)])
    pair = [[LABEL_TOKENS[c], QUERY_TOKENS[c]] if swapped else [QUERY_TOKENS[c], LABEL_TOKENS[c]] for c in classes]
    return np.concatenate([ctx, np.array(pair)], axis=1)


def _cross_entropy(z, y):
    m = z.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(z - m).sum(1))
    return np.mean(lse - z[np.arange(len(y)), y]), lse


def forward(P, w, tokens):
    """Mean loss of the Figure-2 model ``P`` on ``tokens`` (input: all but the last token) and its
    intermediates (``a``: the attention of each input position)."""
    inp, y = tokens[:, :-1], tokens[:, -1]
    X = np.eye(V)[inp]                                       # (B, T, V) one-hot positions
    key = X @ (w["Lk"] if P[:2] == "FA" else w["Lqk"]).T
    q = X[:, -1] @ w["Lq"].T if P[:2] == "FA" else X[:, -1]
    s = np.einsum("bd,btd->bt", q, key) / np.sqrt(V)       # no mask: every input position, itself too
    a = np.exp(s - s.max(1, keepdims=True))
    a /= a.sum(1, keepdims=True)
    x1 = X @ w["Lv"].T if P[2:] == "FO" else X
    c = np.einsum("bt,btd->bd", a, x1)
    z = c @ w["Lo"].T
    loss, lse = _cross_entropy(z, y)
    return loss, dict(X=X, key=key, q=q, a=a, x1=x1, c=c, z=z, lse=lse, y=y)


def loss_and_grad(P, w, tokens):
    """Mean loss and its gradients with respect to the weights ``w``, by hand, position by position."""
    loss, f = forward(P, w, tokens)
    B = len(f["y"])
    gz = np.exp(f["z"] - f["lse"][:, None])
    gz[np.arange(B), f["y"]] -= 1
    gz /= B
    g = {"Lo": gz.T @ f["c"]}
    gc = gz @ w["Lo"]
    if P[2:] == "FO":
        g["Lv"] = np.einsum("bt,bd,btv->dv", f["a"], gc, f["X"])
    ga = np.einsum("btd,bd->bt", f["x1"], gc)
    gs = f["a"] * (ga - (f["a"] * ga).sum(1, keepdims=True)) / np.sqrt(V)
    gkey = np.einsum("bt,bd->btd", gs, f["q"])
    if P[:2] == "FA":
        g["Lk"] = np.einsum("btd,btv->dv", gkey, f["X"])
        g["Lq"] = np.einsum("bt,btd->bd", gs, f["key"]).T @ f["X"][:, -1]
    else:
        g["Lqk"] = np.einsum("btd,btv->dv", gkey, f["X"])
    return loss, g


def fixed_attention_loss_and_grad(w, tokens, alpha):
    """Figure 3: mass ``alpha`` evenly on the positions holding an id > 9, ``1 - alpha`` evenly on the
    others (the last input token included); logits ``W c + b`` (``w``: W, b) or ``W_O (W_V c + b_V) + b_O``."""
    x, y = tokens[:, :-1], tokens[:, -1]
    rel = x > 9
    attn = alpha * rel / rel.sum(1, keepdims=True) + (1 - alpha) * ~rel / (~rel).sum(1, keepdims=True)
    c = np.einsum("bt,btv->bv", attn, np.eye(V)[x])
    if "W" in w:
        z = c @ w["W"].T + w["b"]
    else:
        h = c @ w["W_V"].T + w["b_V"]
        z = h @ w["W_O"].T + w["b_O"]
    loss, lse = _cross_entropy(z, y)
    gz = np.exp(z - lse[:, None])
    gz[np.arange(len(y)), y] -= 1
    gz /= len(y)
    if "W" in w:
        return loss, {"W": gz.T @ c, "b": gz.sum(0)}
    gh = gz @ w["W_O"]
    return loss, {"W_O": gz.T @ h, "b_O": gz.sum(0), "W_V": gh.T @ c, "b_V": gh.sum(0)}


# --------------------------------------------------------------------------------------------------
# The expected-count limit (the theory beside SGD): each class's mean sequence, a gradient flow on it
# --------------------------------------------------------------------------------------------------
BOUND = 1 / np.sqrt(V)
#: The notebooks' Linear weights that the authors' initialization draws uniformly (the rest start at 1e-6 I).
AUTHORS_UNIFORM = {"FAFO": ("Lq", "Lk"), "CACO": ("Lqk", "Lo")}


def linear_names(P):
    """The notebook weights of ``P`` in the package's draw order (QK circuit first)."""
    return (["Lq", "Lk"] if P[:2] == "FA" else ["Lqk"]) + (["Lo", "Lv"] if P[2:] == "FO" else ["Lo"])


def initial_weights(P, init, seed):
    """The notebook weights at the start of seed ``seed``: ``numpy.random.default_rng(seed)`` draws
    ``U(-1/sqrt(50), 1/sqrt(50))`` for the uniform ones in draw order, the others are ``1e-6 I``."""
    rng = np.random.default_rng(seed)
    uniform = AUTHORS_UNIFORM.get(P, ()) if init == "authors" else (linear_names(P) if init == "uniform" else ())
    return {k: rng.uniform(-BOUND, BOUND, (V, V)) if k in uniform else 1e-6 * np.eye(V) for k in linear_names(P)}


def mean_counts(seq_len=64):
    """``(4, V)``: class k's expected input counts, ``(seq_len - 2) w_k / 15.5`` plus the query read last."""
    counts = np.stack([(seq_len - 2) * class_weights(k) / class_weights(k).sum() for k in range(4)])
    counts[np.arange(4), QUERY_TOKENS] += 1
    return counts


def expected_count_forward(P, w, seq_len=64):
    """Class mean of the cross-entropies of the four mean sequences (:func:`mean_counts`, classes equally
    likely), each token type's softmax weight its count, and the intermediates (``a``: ``(4, V)``, the
    attention on each token type)."""
    n, q = mean_counts(seq_len), np.array(QUERY_TOKENS)
    A = w["Lq"].T @ w["Lk"] if P[:2] == "FA" else w["Lqk"]         # score of type v read by query q: A[q, v]
    s = A[q] / np.sqrt(V)
    e = n * np.exp(s - s.max(1, keepdims=True))
    a = e / e.sum(1, keepdims=True)
    OV = w["Lo"] @ w["Lv"] if P[2:] == "FO" else w["Lo"]
    z = a @ OV.T
    loss, lse = _cross_entropy(z, np.array(LABEL_TOKENS))
    return loss, dict(A=A, a=a, OV=OV, z=z, lse=lse)


def expected_count_loss_and_grad(P, w, seq_len=64):
    """:func:`expected_count_forward`'s loss and its gradients with respect to ``w``, by hand."""
    loss, f = expected_count_forward(P, w, seq_len)
    q, a = np.array(QUERY_TOKENS), f["a"]
    gz = np.exp(f["z"] - f["lse"][:, None])
    gz[np.arange(4), LABEL_TOKENS] -= 1
    gz /= 4
    gOV = gz.T @ a
    ga = gz @ f["OV"]
    gs = a * (ga - (a * ga).sum(1, keepdims=True)) / np.sqrt(V)
    gA = np.zeros((V, V))
    np.add.at(gA, q, gs)
    g = {"Lo": gOV @ w["Lv"].T, "Lv": w["Lo"].T @ gOV} if P[2:] == "FO" else {"Lo": gOV}
    g.update({"Lq": w["Lk"] @ gA.T, "Lk": w["Lq"] @ gA} if P[:2] == "FA" else {"Lqk": gA})
    return loss, g


def expected_count_shares(P, w, relevant, seq_len=64):
    """Class means of the attention on the query's own token type, on ``relevant[k]`` (class k's relevant
    types) and on the rest."""
    a = expected_count_forward(P, w, seq_len)[1]["a"]
    own = a[np.arange(4), QUERY_TOKENS]
    rel = np.array([a[k, relevant[k]].sum() for k in range(4)])
    return {"self_attention": own.mean(), "relevant_attention": rel.mean(), "other_attention": (1 - own - rel).mean()}
