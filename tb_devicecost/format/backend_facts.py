"""What the analysis, its words and the trials know of each Keras backend, as data.

A run records its Keras backend's name (`backend` in the run info). What
differs per backend once a run is recorded, for judging it and advising
on it, is here, one `BackendFacts` a backend, so that neither the
analysis nor its words compare a backend's name. It sits on the format's
floor because both reach it: the analysis cannot import
`tb_devicecost.backends` (a floor above it), whose `Backend`s give the
same facts to the recording (`Backend.facts`).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class BackendFacts:
    """What advice for a run of one Keras backend may name.

    Attributes:
        steps_per_execution: Whether Keras supports `steps_per_execution`
            on it (Keras 3.15: not on PyTorch).
        input_loaders: The input loaders of its ecosystem that advice names
            beside Keras's own: `"grain"` (JAX), `"torch DataLoader"`
            (PyTorch).
        map_threads_share_cores: Whether its `tf.data` maps run on threads
            of the training process beside the step's compute, on the same
            cores of a CPU-only host (TensorFlow).
        tf_data: Whether Keras feeds its fits through `tf.data` and takes
            its tensors as they are, so a trial may build a `tf.data`
            pipeline (TensorFlow).
        forks_safely: Whether a fit may fork Keras's worker processes: a
            fork of a process running JAX's threads can deadlock (keras
            #20619), and a trial must never hang.
        quick_jit_compile: Whether `jit_compile=True` compiles within a
            short fit (on PyTorch it is `torch.compile`: minutes).
        fetches_each_batch: Whether, with `steps_per_execution=1`, runs
            recorded before the fetch was timed inside Keras's graph (no
            `fetch_timed_in_graph` in their run info) had the callback
            fetch each batch itself and hand it to the step Keras traced
            (TensorFlow): the same graph, but Keras's own loop wraps each
            step's results in a `tf.experimental.Optional`, then asks it
            whether it holds a value and takes the value out: two small
            eager operations a step that those fits skipped (issue 36).
    """

    steps_per_execution: bool = True
    input_loaders: tuple = ()
    map_threads_share_cores: bool = False
    tf_data: bool = False
    forks_safely: bool = True
    quick_jit_compile: bool = True
    fetches_each_batch: bool = False


_FACTS = {
    "tensorflow": BackendFacts(map_threads_share_cores=True, tf_data=True, fetches_each_batch=True),
    "jax": BackendFacts(input_loaders=("grain",), forks_safely=False),
    "torch": BackendFacts(
        steps_per_execution=False, input_loaders=("torch DataLoader",), quick_jit_compile=False),
}
NAMES = tuple(_FACTS)
# A run that did not record its backend: advice names PyTorch's loader too.
_UNRECORDED = BackendFacts(input_loaders=("torch DataLoader",))
# A backend we do not measure: nothing of its own.
_OTHER = BackendFacts()


def of(name):
    """The `BackendFacts` of the backend `name` (`None`: not recorded)."""
    if name is None:
        return _UNRECORDED
    return _FACTS.get(name, _OTHER)
