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
