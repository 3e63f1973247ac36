"""Taylor rules (`tg.jet`) of the primitives that hold a function: `custom_jvp_call`,
`custom_vjp_call` and `checkpoint`.

A custom derivative rule does not change the function: it changes how its first derivative is
computed (a stable formula where the function's own operations lose precision or give NaN, a
cheaper backward pass, a gradient clipped or straight-through on purpose). A jvp or vjp rule
also says nothing of the higher coefficients a Taylor series needs. So the Taylor rule of both
custom calls is the Taylor pass over the primal function (`call`), as
`jax.experimental.jet` does (it calls the function and ignores the rules): the series is the
function's own, exact where the function's operations are, and a rule that deliberately
departs from the true derivative (a straight-through estimator) is not followed. The
function's closed-over values are operands like its arguments and carry their series too.

A checkpoint's Taylor rule is a checkpoint of its body's Taylor pass (`control_taylor`), saving
nothing, as its jvp rule is: the policy chose what reverse mode keeps when the node was bound.
"""

from __future__ import annotations

from tracegrad.interpret import eval_graph
from tracegrad.primitives.series import order_of
from tracegrad.transforms.control_taylor import flat_terms, masks_of, taylor_body, unflat_terms
from tracegrad.transforms.custom_checkpoint import NOTHING, bind_checkpoint
from tracegrad.transforms.jet import taylor_pass
from tracegrad.transforms.vjp import value_reader


def custom_taylor(primals, series, *, out, call, n_consts, **rules):
    # the function itself, not its custom rule (see the module docstring): its Taylor pass,
    # inline, on the node's operands (structural zeros stay zeros)
    env = eval_graph(call, list(primals), keep_all=True)
    return tuple(taylor_pass(call, value_reader(env), list(series)))


def checkpoint_taylor(primals, series, *, out, body, n_saved):
    k = order_of(series)
    masks = masks_of(series, k)
    graph, has = taylor_body(body, masks, k, primal_outputs=False)
    terms = flat_terms(series, masks, body.in_avals)
    res = bind_checkpoint(graph, list(primals) + terms, NOTHING)
    return unflat_terms(res, has)


__all__ = ["checkpoint_taylor", "custom_taylor"]
