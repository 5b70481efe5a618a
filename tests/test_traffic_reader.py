"""load_traffic (kvmodel.traffic.reader): every kind of source gives the same requests; progress."""

import gzip
import io

import pytest
from traffic_helpers import AZURE_CODE, load_traffic, same_requests, shrink_pieces, trace_csv


@pytest.fixture
def small_pieces(monkeypatch):
    shrink_pieces(monkeypatch)


def test_file_like_upload_and_progress():
    class Upload:  # what Streamlit's UploadedFile offers
        name = "AzureLLMInferenceTrace_code.csv"

        def getvalue(self):
            return AZURE_CODE.read_bytes()

    seen = []
    r = load_traffic(Upload(), progress=seen.append)
    assert len(r.prompt_tokens) == 8819
    assert len(seen) >= 3 and seen == sorted(seen) and seen[0] == 0 and seen[-1] == 1
    r = load_traffic(io.BytesIO(b"prompt_tokens\n5\n"))
    assert r.prompt_tokens.tolist() == [5]


@pytest.mark.parametrize("pieces", [False, True])
def test_path_bytes_and_uploads_give_the_same_requests(tmp_path, request, pieces):
    if pieces:
        request.getfixturevalue("small_pieces")
    data = trace_csv(3000, {1500: "375.00,-3,2", 2200: "1,2"})
    path = tmp_path / "trace.csv"
    path.write_bytes(data)

    class Upload(io.BytesIO):  # Streamlit's UploadedFile is a BytesIO with a name
        name = "trace.csv"

    ref = load_traffic(path)
    assert len(ref.prompt_tokens) == 2998 and ref.skipped_rows == 2
    for src in (
        data,
        bytearray(data),
        memoryview(data),
        Upload(data),
        io.BufferedReader(io.BytesIO(data)),
    ):
        same_requests(load_traffic(src, name="trace.csv"), ref)
    packed = tmp_path / "trace.csv.gz"
    packed.write_bytes(gzip.compress(data))
    for src in (packed, packed.read_bytes()):
        r = load_traffic(src, name="trace.csv.gz")
        assert r.columns.pop("container") == "csv+gzip"
        r.columns["container"] = "csv"
        same_requests(r, ref)


def test_progress_over_many_pieces(small_pieces):
    seen = []
    load_traffic(trace_csv(5000), name="t.csv", progress=seen.append)
    assert seen[0] == 0 and seen[-1] == 1 and seen == sorted(seen) and 5 <= len(seen) <= 60
