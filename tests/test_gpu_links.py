"""A GPU has the scale-out networks, PCIe, and of the GPU-to-GPU fabrics only its own
(kvmodel.topology.gpu_has_link; session 20's browser review: an MI300X or L40S pair was offered
NVLink 4, an H100 pair NVLink 5 as its best interconnect)."""

import pytest

from kvmodel import catalog
from kvmodel.build import scenario_from_inputs
from kvmodel.evaluation import evaluate
from kvmodel.sensitivity import tornado
from kvmodel.topology import gpu_has_link, scale_up_feasible
from kvview.words import not_buildable


@pytest.mark.parametrize(
    ("gpu", "link", "has"),
    [("h100-sxm", "nvlink4", True), ("h100-sxm", "nvlink5", False), ("h200", "nvlink4", True),
     ("h800", "nvlink4", False), ("h800", "nvlink4-h800", True), ("b200", "nvlink5", True),
     ("mi300x", "nvlink4", False), ("mi300x", "infinity-fabric", True),
     ("l40s", "nvlink4", False), ("l40s", "pcie4", True), ("l40s", "pcie5", True),
     ("mi300x", "ib-ndr", True), ("a100-80", "100gbe", True)],
)  # fmt: skip
def test_a_gpu_has_scale_out_pcie_and_its_own_fabric_only(gpu, link, has):
    g, lk = catalog.get_gpu(gpu), catalog.get_link(link)
    assert gpu_has_link(g, lk) is has
    if not has:  # whatever the instances' size
        assert not scale_up_feasible(g, 1, 1, lk)


def test_a_scenario_on_another_gpus_fabric_says_why_it_cannot_be_built():
    ev = evaluate(scenario_from_inputs({"gpu": "mi300x", "link": "nvlink4", "tp": "1"}))
    assert not ev.scale_up_feasible
    assert any("AMD Instinct MI300X has no NVLink 4 (H100)" in p and "Infinity Fabric" in p
               for p in ev.problems)  # fmt: skip
    why = not_buildable(scenario_from_inputs({"gpu": "l40s"}), ["nvlink4", "pcie4", "ib-ndr"])
    assert why == {"nvlink4": "not buildable: no such link on NVIDIA L40S",
                   "pcie4": "not buildable: TP 8 + TP 8 > one 8-GPU domain"}  # fmt: skip


def test_the_tornado_offers_only_links_the_pair_can_use():
    df = tornado(scenario_from_inputs({"stack": "mooncake"}))  # H100, TP 8 + TP 8
    ic = df[df["input"] == "interconnect"].iloc[0]
    assert ic["low"] == "InfiniBand XDR 800G"  # was NVLink 5 (B200), which an H100 has not


def test_which_network_leaves_out_a_fabric_the_gpus_do_not_have():
    """Capacity's 'Which network' planned an MI300X deployment over NVLink 4 (session 20)."""
    from app_helpers import app

    from kvmodel import capacity as cap

    sc = scenario_from_inputs({"gpu": "mi300x", "link": "400gbe"})
    links = ("nvlink4", "infinity-fabric", "ib-ndr")
    assert cap.foreign_links(sc, links) == ("nvlink4",)
    mixed = scenario_from_inputs({"gpu": "h100-sxm", "gpud": "mi300x", "link": "ib-ndr"})
    assert cap.foreign_links(mixed, links) == ("nvlink4", "infinity-fabric")  # one GPU lacks
    wl = cap.Workload.fixed(2.0, 1024, 128)
    nets = cap.network_plans(sc, wl, cap.Slo(ttft_s=2.0, tpot_s=0.1), links)
    assert list(nets["link"]) == ["400gbe", "infinity-fabric", "ib-ndr"]
    at = app({"gpu": "mi300x", "link": "400gbe"}, "pages/capacity.py", article=False)
    at.session_state["cap_networks_open"] = True
    at.run()
    said = [c.value for c in at.caption if "Left out" in c.value]
    assert said and said[0].endswith(
        "Left out: NVLink 4 (H100), a GPU-to-GPU link the AMD Instinct MI300X does not have.")
