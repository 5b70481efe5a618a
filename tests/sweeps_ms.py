"""The kvmodel.sweeps tables as the pages get them: SI tables through ``kvview.fmt.in_ms`` (the
figures, the band table and the takeaways read milliseconds, as the pages show and export)."""

from kvmodel import sweeps
from kvmodel.sweeps import mitigation_options, models_table, seq_grid  # noqa: F401 (re-export)
from kvview.fmt import in_ms


def link_batch_table(*args, **kwargs):
    return in_ms(sweeps.link_batch_table(*args, **kwargs))


def batch_sweep(*args, **kwargs):
    return in_ms(sweeps.batch_sweep(*args, **kwargs))


def seq_sweep(*args, **kwargs):
    curves, critical = sweeps.seq_sweep(*args, **kwargs)
    return in_ms(curves), critical


def model_seq_sweep(*args, **kwargs):
    return in_ms(sweeps.model_seq_sweep(*args, **kwargs))


def mitigation_table(*args, **kwargs):
    return in_ms(sweeps.mitigation_table(*args, **kwargs))


def timeline(*args, **kwargs):
    return in_ms(sweeps.timeline(*args, **kwargs))
