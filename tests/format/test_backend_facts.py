"""`tb_devicecost.format.backend_facts`: what the analysis and its words know
of each Keras backend, so that neither compares a backend's name (issue 37)."""

from tb_devicecost import backends
from tb_devicecost.analysis import interventions
from tb_devicecost.backends import base
from tb_devicecost.format import backend_facts
from tb_devicecost.words import phrases


class _Run:
    """The fields of a `RunData` that `interventions` reads."""

    def __init__(self, backend):
        self.backend = backend


def test_every_measured_backend_has_its_facts_and_its_backend_gives_them():
    assert backend_facts.NAMES == backends.NAMES
    for name in backends.NAMES:
        backend = base.Backend()
        backend.name = name
        assert backend.facts is backend_facts.of(name)


def test_steps_per_execution_is_advised_where_keras_supports_it():
    # Keras 3.15 has no steps_per_execution on PyTorch.
    assert [interventions.spe_supported(_Run(name)) for name in ("tensorflow", "jax", "torch")] \
        == [True, True, False]
    assert interventions.spe_supported(_Run(None))


def test_each_backend_s_input_advice_names_its_own_loaders():
    arrays = {"kind": "arrays"}
    assert "grain DataLoader" in phrases.input_fix(arrays, "jax", tf_data=False)
    assert "grain" not in phrases.input_fix(arrays, "torch", tf_data=False)
    generator = {"kind": "generator"}
    assert "grain DataLoader with worker_count=N" in phrases.input_fix(generator, "jax")
    assert "grain" not in phrases.input_fix(generator, "tensorflow")
    # A pipeline not recorded: PyTorch's DataLoader where the backend is
    # PyTorch's or unknown, never on another.
    assert "torch DataLoader" in phrases.input_fix(None, "torch")
    assert "torch DataLoader" in phrases.input_fix(None, None)
    assert "torch DataLoader" not in phrases.input_fix(None, "jax")
    assert "torch DataLoader" not in phrases.input_fix(None, "numpy")
