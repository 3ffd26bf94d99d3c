"""The clock and power sampler of the GPU acceptance run: parsing nvidia-smi's lines, and no error without it."""
from __future__ import annotations

from benchmarks.gpu_clocks import ClockSampler, parse, summary

LINES = [
    "1980, 1980, 310.5, 700.00, 41, 0x0000000000000000",
    "1755, 1980, 699.8, 700.00, 55, 0x0000000000000004",
    "1710, 1980, 700.2, 700.00, 57, 0x0000000000000004",
    "[N/A], 1980, [N/A], 700.00, 57, 0x0000000000000001",
    "not a sample",
]


def test_samples_are_parsed_and_summarised_with_the_power_cap_share():
    samples = parse(LINES, with_reasons=True)
    assert len(samples) == 4
    assert samples[3]["clocks.sm"] is None   # [N/A] is no number
    result = summary(samples)
    assert result["samples"] == 4
    assert result["sm_clock_mhz_median"] == 1755
    assert result["sm_clock_mhz_min"] == 1710
    assert result["clock_share_of_max"] == round(1755 / 1980, 3)
    assert result["power_limit_w"] == 700.0
    assert result["power_capped_share"] == 0.5      # two of four samples name the software power cap
    assert result["capped_share"] == 0.5            # 0x1 (GPU idle) is no cap


def test_lines_without_the_reasons_field_still_give_clocks_and_power():
    samples = parse([line.rsplit(",", 1)[0] for line in LINES[:3]], with_reasons=False)
    result = summary(samples)
    assert result["power_w_max"] == 700.2 and "capped_share" not in result


def test_no_samples_and_no_binary_give_none_not_an_error():
    assert summary([]) is None
    with ClockSampler(binary="no-such-nvidia-smi-here") as clocks:
        pass
    assert clocks.result is None


def test_a_sampler_reads_a_looping_nvidia_smi_until_the_step_ends(tmp_path):
    """A stand-in for nvidia-smi: it names the newer reasons field in its help and prints samples until stopped."""
    fake = tmp_path / "fake-smi"
    fake.write_text("#!/bin/sh\n"
                    "case \"$1\" in --help-query-gpu) echo 'clocks_event_reasons.active'; exit 0;; esac\n"
                    "case \"$1\" in *clocks_event_reasons.active*) ;; *) exit 3;; esac\n"
                    "while true; do echo '1800, 1980, 650.0, 700.00, 50, 0x0000000000000004'; sleep 0.05; done\n")
    fake.chmod(0o755)
    import time

    with ClockSampler(binary=str(fake)) as clocks:
        time.sleep(0.3)
    assert clocks.result is not None and clocks.result["samples"] >= 2
    assert clocks.result["power_capped_share"] == 1.0 and clocks.result["sm_clock_mhz_median"] == 1800
