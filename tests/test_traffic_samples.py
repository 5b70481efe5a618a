"""The shipped traces (kvmodel.traffic.samples): every one is there, an unknown id is refused."""

import pytest

from kvmodel import catalog
from kvmodel.traffic import DEFAULT_SAMPLE, SAMPLES, sample_path


@pytest.mark.parametrize("sample", list(SAMPLES))
def test_every_sample_file_exists_with_its_provenance(sample):
    path = sample_path(sample)
    assert path.is_file() and path.stat().st_size > 0
    file, label, source = SAMPLES[sample]
    assert path.as_posix().endswith(file) and label and source


def test_unknown_sample_lists_the_valid_ids():
    assert DEFAULT_SAMPLE in SAMPLES
    with pytest.raises(catalog.UnknownIdError, match="azure-conv"):
        sample_path("azure-conversation")
