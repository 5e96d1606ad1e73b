"""`--data`: real images through the DataLoader in bench and tune, on the CPU.

The folders are written here with Pillow (small images, a few hundred) or by rocmdoctor's own
synthetic-jpeg writer; the runs are the real commands in subprocesses."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from rocmdoctor.cli.data import shm_warning
from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners.bench import dataset, synthetic
from rocmdoctor.tuners.bench.data import DataError, LoaderSettings, crop_box, list_images
from rocmdoctor.tuners.bench.feed import verdict_of
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.crashes import known_cause
from rocmdoctor.tuners.model import Platform, SpaceInfo
from rocmdoctor.tuners.result import how_to_apply
from tests.helpers import fixture_text, processes_with

Image = pytest.importorskip("PIL.Image", reason="Pillow writes the test images (test extras)")

TUNE = [sys.executable, "-m", "rocmdoctor", "tune"]
BENCH = [sys.executable, "-m", "rocmdoctor", "bench"]
TINY = ["--model", "tinycnn", "--device", "cpu", "--image-size", "32", "--batch-size", "8",
        "--steps", "3", "--warmup", "1"]


def _folder(root: Path, count: int = 240, classes: int = 3) -> Path:
    """`count` small JPEGs of random sizes in `classes` class folders."""
    rng = random.Random(0)
    for i in range(count):
        folder = root / f"class{i % classes}"
        folder.mkdir(parents=True, exist_ok=True)
        size = (rng.randint(40, 96), rng.randint(40, 96))
        colour = tuple(rng.randint(0, 255) for _ in range(3))
        Image.new("RGB", size, colour).save(folder / f"{i:04d}.jpg", quality=85)
    return root


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ROCMDOCTOR_TESTING"}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1",
               COLUMNS="200", **extra)  # a wide table: one row a line
    return env


def _run(args: list[str], tmp: Path, timeout: float = 300, **extra: str
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=tmp, env=_env(tmp, **extra), capture_output=True,
                          text=True, timeout=timeout)


# --- the folder ---------------------------------------------------------------------------

def test_list_images_reads_the_imagefolder_layout_in_order(tmp_path: Path) -> None:
    root = _folder(tmp_path / "d", count=6, classes=2)
    (root / "class0" / "notes.txt").write_text("not an image")
    samples, classes = list_images(str(root))
    assert classes == ["class0", "class1"]
    assert [(Path(p).name, c) for p, c in samples] == [
        ("0000.jpg", 0), ("0002.jpg", 0), ("0004.jpg", 0),
        ("0001.jpg", 1), ("0003.jpg", 1), ("0005.jpg", 1)]


@pytest.mark.parametrize("layout, message", [
    ("missing", "--data {root}: no such folder"),
    ("empty", "--data {root}: no class folders in it (ImageFolder layout: "
              "{root}/<class>/<image>.jpg)"),
    ("no-images", "--data {root}: no JPEG or PNG files under its class folders"),
])
def test_a_folder_that_holds_no_images_is_one_line(tmp_path: Path, layout: str,
                                                    message: str) -> None:
    root = tmp_path / "d"
    if layout != "missing":
        root.mkdir()
    if layout == "no-images":
        (root / "a").mkdir()
        (root / "a" / "x.txt").write_text("text")
    with pytest.raises(DataError) as caught:
        list_images(str(root))
    assert str(caught.value) == message.format(root=root)


def test_the_random_resized_crop_stays_inside_the_image() -> None:
    rng = random.Random(1)
    for _ in range(500):
        h, w = rng.randint(1, 700), rng.randint(1, 700)
        top, left, ch, cw = crop_box(h, w, rng)
        assert 0 <= top and top + ch <= h and 0 <= left and left + cw <= w
        assert ch > 0 and cw > 0


def test_the_random_resized_crop_draws_torchvisions_areas_and_aspect_ratios() -> None:
    """RandomResizedCrop's defaults: 8 to 100 % of the image, aspect 3/4 to 4/3 (within one
    pixel's rounding); where ten draws do not fit, the centre crop at the nearest ratio."""
    rng = random.Random(2)
    shares, ratios = [], []
    for _ in range(2000):
        top, left, h, w = crop_box(375, 500, rng)
        shares.append(h * w / (375 * 500))
        ratios.append(w / h)
    assert 0.075 < min(shares) < 0.1 and 0.95 < max(shares) <= 1.0
    assert all(0.74 < r < 1.35 for r in ratios)
    assert min(ratios) < 0.78 and max(ratios) > 1.29
    # a strip far wider than 4/3 (or taller than 3/4): the centre crop at that ratio
    assert crop_box(10, 700, random.Random(0)) == (0, 343, 10, 13)
    assert crop_box(700, 10, random.Random(0)) == (343, 0, 13, 10)


def test_loader_settings_drop_what_acts_only_with_workers() -> None:
    none = LoaderSettings.of({"persistent_workers": True, "prefetch_factor": 4})
    assert none.dataloader_args() == {"num_workers": 0, "pin_memory": False}
    assert (none.persistent_workers, none.prefetch_factor) == (False, None)
    four = LoaderSettings.of({"num_workers": 4, "persistent_workers": True,
                              "prefetch_factor": 4, "pin_memory": True})
    assert four.dataloader_args() == {"num_workers": 4, "pin_memory": True,
                                      "persistent_workers": True, "prefetch_factor": 4}


def test_the_verdict_follows_the_share_of_time_waiting_for_input() -> None:
    assert [verdict_of(s) for s in (0.0, 0.1, 0.11, 0.49, 0.5, 0.9)] == [
        "compute-bound", "compute-bound", "in between", "in between", "input-bound",
        "input-bound"]


# --- synthetic-jpeg -----------------------------------------------------------------------

@pytest.mark.parametrize("value, count", [("synthetic-jpeg", dataset.DEFAULT_SYNTHETIC),
                                          ("synthetic-jpeg:250", 250), ("/data/imagenet", None),
                                          ("synthetic-jpegs", "error"),
                                          ("synthetic-jpeg:0", "error"),
                                          ("synthetic-jpeg:x", "error")])
def test_synthetic_counts(value: str, count: Any) -> None:
    if count == "error":
        with pytest.raises(DataError, match="expected synthetic-jpeg or synthetic-jpeg:N"):
            dataset.synthetic_count(value)
    else:
        assert dataset.synthetic_count(value) == count


def test_synthetic_images_are_real_jpegs_of_imagenet_like_sizes_and_are_reused(
        tmp_path: Path) -> None:
    said: list[str] = []
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    first = dataset.resolve("synthetic-jpeg:30", env=env, say=said.append)
    folder = Path(first.path)
    assert folder == tmp_path / "rocmdoctor" / "data" / "synthetic-jpeg-30-v1"
    assert (first.images, first.classes, first.synthetic, first.written) == (30, 10, True, True)
    files = sorted(folder.glob("c*/*.jpg"))
    assert len(files) == 30 and not list(folder.glob("c*/*.part"))
    assert first.bytes == sum(f.stat().st_size for f in files)
    for index, path in enumerate(sorted(files, key=lambda p: p.name)):
        with Image.open(path) as image:
            assert image.format == "JPEG"
            assert image.size == synthetic.size_of(index)
            assert max(image.size) == 500 and 333 <= min(image.size) <= 500
    assert said[0].startswith("rocmdoctor: writing 30 synthetic JPEG files into ")
    mtimes = [f.stat().st_mtime_ns for f in files]
    said.clear()
    again = dataset.resolve("synthetic-jpeg:30", env=env, say=said.append)
    assert again.path == first.path and not again.written and again.bytes == first.bytes
    assert said == [f"rocmdoctor: --data synthetic-jpeg:30: the 30 JPEG files written before, "
                    f"in {folder}"]
    assert [f.stat().st_mtime_ns for f in files] == mtimes


def test_an_interrupted_synthetic_write_is_finished_not_reused(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    folder = tmp_path / "rocmdoctor" / "data" / "synthetic-jpeg-12-v1"
    synthetic.write(str(folder), 5, report=lambda line: None)  # as if cut after 5 files
    kept = (folder / synthetic.name_of(0)).stat().st_mtime_ns
    done = dataset.resolve("synthetic-jpeg:12", env=env)
    assert done.written and len(list(folder.glob("c*/*.jpg"))) == 12
    assert (folder / synthetic.name_of(0)).stat().st_mtime_ns == kept


def test_a_python_that_cannot_write_jpegs_is_one_line(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    with pytest.raises(DataError) as caught:
        dataset.resolve("synthetic-jpeg:3", python="/bin/false", env=env)
    assert str(caught.value) == "writing the synthetic JPEG files failed: exit code 1"


# --- /dev/shm -----------------------------------------------------------------------------

def test_shm_too_small_for_the_workers_says_how_to_give_the_container_more() -> None:
    spec = BenchSpec(model="resnet50", batch_size=64)
    docker_default = 64 * 1024 * 1024
    assert shm_warning(spec, 4, free=docker_default) == (
        "/dev/shm has 64 MiB free, and 4 DataLoader worker(s) keep about 294 MiB of batches "
        "there: a worker that finds no room dies of a bus error. In a container, give it "
        "more: docker run --shm-size=16g ... (or --ipc=host)")
    assert shm_warning(spec, 4, free=16 * 1024 ** 3) is None
    assert shm_warning(spec, 0, free=docker_default) is None


def test_a_worker_out_of_shared_memory_is_a_known_cause() -> None:
    text = fixture_text("trial-crash-dataloader-bus-error-insufficient-shm-pipedream-"
                        "TRUNCATED.txt")
    cause = known_cause("the benchmark crashed", text)
    assert cause is not None and cause.key == "dataloader-shm"
    assert "--shm-size" in cause.what
    assert known_cause("the benchmark crashed", "RuntimeError: CUDA error") is None


# --- the tuner's loader knobs -------------------------------------------------------------

CPU16 = Platform(kind="cpu", torch="2.13.0", cpu_count=16)
CUDA = Platform(kind="cuda", torch="2.13.0", cuda="12.8", device="H200", arch="sm_90",
                cpu_count=16, device_count=1, torchvision="0.28.0")


def test_the_loader_knobs_are_searched_only_with_data() -> None:
    without = sp.plan_space(CPU16, BenchSpec(model="tinycnn", device="cpu"), {})
    assert not {"num_workers", "pin_memory"} & ({pk.name for pk in without.knobs}
                                                | set(dict(without.skipped)))
    asked = sp.plan_space(CPU16, BenchSpec(model="tinycnn", device="cpu"), {},
                          space="num_workers")
    assert asked.knobs == () and dict(asked.skipped) == {
        "num_workers": "only with --data (images read through a DataLoader)"}
    with_data = sp.plan_space(CPU16, BenchSpec(model="tinycnn", device="cpu", data="/d"), {})
    workers = with_data.get("num_workers")
    assert workers is not None
    assert (workers.labels, workers.baseline) == (("0", "2", "4", "8", "16"), "0")
    assert [pk.name for pk in with_data.knobs if pk.knob.uses == ("data",)] == [
        "num_workers", "persistent_workers", "prefetch_factor"]
    assert dict(with_data.skipped)["pin_memory"] == "only on ROCm, CUDA"


def test_worker_counts_follow_the_cpus_the_process_may_use() -> None:
    spec = BenchSpec(model="resnet50", data="/d", settings={"num_workers": 4})
    six = sp.plan_space(Platform(kind="cpu", cpu_count=6), spec, {}).get("num_workers")
    assert six is not None and six.labels == ("4", "0", "2", "6")
    one = sp.plan_space(Platform(kind="cpu", cpu_count=1), BenchSpec(model="resnet50",
                                                                      data="/d"), {})
    assert one.get("num_workers") is not None
    assert one.get("num_workers").labels == ("0", "1")  # type: ignore[union-attr]


def test_gpu_decoding_is_searched_when_asked_for_and_needs_torchvision() -> None:
    spec = BenchSpec(model="resnet50", data="/d")
    # slower than CPU workers on the H200, and it hung there with workers: not by default
    assert sp.plan_space(CUDA, spec, {}).get("gpu_decode") is None
    assert sp.plan_space(CUDA, spec, {}, space="full").get("gpu_decode") is not None
    assert sp.plan_space(CUDA, spec, {}, space="gpu_decode,num_workers").get(
        "gpu_decode") is not None
    bare = sp.plan_space(Platform(kind="cuda", cuda="12.8", torch="2.13.0", cpu_count=16,
                                  device_count=1), spec, {}, space="full")
    assert dict(bare.skipped)["gpu_decode"] == ("needs torchvision (torchvision.io.decode_jpeg) "
                                                "in the Python that trains")


def test_the_apply_lines_give_one_dataloader_with_what_was_measured() -> None:
    spec = BenchSpec(model="resnet50", data="/d")
    space: SpaceInfo = sp.plan_space(CUDA, spec, {}, space="full").info()
    params = {"num_workers": "8", "pin_memory": "on", "persistent_workers": "on",
              "prefetch_factor": "default", "gpu_decode": "default", "batch_size": "256"}
    loader = {"num_workers": 8, "pin_memory": True, "persistent_workers": True}
    apply = how_to_apply(space, params, {}, "cuda", spec, None, loader)
    assert apply.python == (
        "loader = torch.utils.data.DataLoader(dataset, batch_size=256, shuffle=True, "
        "drop_last=True, num_workers=8, pin_memory=True, persistent_workers=True)",)
    unchanged = how_to_apply(space, {**params, "num_workers": "0", "pin_memory": "default",
                                     "persistent_workers": "default"}, {}, "cuda", spec, None,
                             {"num_workers": 0, "pin_memory": False})
    assert unchanged.python == ()


# --- end to end ---------------------------------------------------------------------------

@pytest.mark.e2e
def test_bench_data_measures_the_wait_for_input_apart_from_the_compute(tmp_path: Path) -> None:
    root = _folder(tmp_path / "images")
    marker = f"rocmdoctor-test-{uuid.uuid4().hex}"
    done = _run(BENCH + TINY + ["--data", str(root), "--set", "num_workers=2", "--json",
                                "r.json"], tmp_path, ROCMDOCTOR_TEST_MARK=marker)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    data = result["data"]
    assert data["path"] == str(root) and (data["images"], data["classes"]) == (240, 3)
    assert data["loader"] == {"num_workers": 2, "pin_memory": False,
                              "persistent_workers": False}
    split = data["split"]
    assert split["steps"] == result["metrics"]["measured_steps"] == 3
    assert split["wait_s"] > 0 and split["compute_s"] > 0
    assert split["wall_s"] >= split["compute_s"]
    assert split["verdict"] == verdict_of(split["input_share"])
    assert split["how"] == "host timers around the step and the batch"
    # a run that reads images is judged by all its images over all its time
    tput = result["metrics"]["throughput"]
    assert tput["basis"] == "mean" and tput["mean"] == pytest.approx(
        result["metrics"]["measured_steps"] * 8 / result["metrics"]["measured_s"])
    assert f"\nthroughput  {tput['mean']:,.1f} images/s over all measured time (median step " \
        f"{tput['median']:,.1f}, " in done.stdout
    assert "\ndata        240 images in 3 classes; DataLoader(num_workers=2, pin_memory=False, " \
           "persistent_workers=False)\n" in done.stdout
    assert f"\ninput       {split['verdict']}: the device waited for input " in done.stdout
    assert processes_with(marker) == []  # the loader's workers ended with the run


@pytest.mark.e2e
def test_a_corrupt_image_an_empty_folder_and_too_few_images_are_one_line(tmp_path: Path
                                                                          ) -> None:
    root = _folder(tmp_path / "images", count=20, classes=1)
    (root / "class0" / "0003.jpg").write_bytes(b"this is no JPEG")
    corrupt = _run(BENCH + TINY + ["--data", str(root), "--batch-size", "20"], tmp_path)
    assert corrupt.returncode == 2
    assert corrupt.stderr.splitlines()[-1].startswith(
        f"rocmdoctor: error: cannot decode {root}/class0/0003.jpg: ")
    assert "Traceback" not in corrupt.stderr
    (tmp_path / "empty").mkdir()
    empty = _run(BENCH + TINY + ["--data", str(tmp_path / "empty")], tmp_path)
    assert (empty.returncode, empty.stderr) == (2, (
        f"rocmdoctor: error: --data {tmp_path}/empty: no class folders in it (ImageFolder "
        f"layout: {tmp_path}/empty/<class>/<image>.jpg)\n"))
    few = _run(BENCH + TINY + ["--data", str(root), "--batch-size", "64"], tmp_path)
    assert (few.returncode, few.stderr) == (2, (
        f"rocmdoctor: error: --data {root}: 20 images, fewer than one batch of 64\n"))
    text = _run(BENCH + ["--model", "gpt2", "--device", "cpu", "--data", str(root)], tmp_path)
    assert (text.returncode, text.stderr) == (2, (
        "rocmdoctor: error: --data takes images: it works with the image models (resnet50, "
        "vit_b_16, tinycnn), not gpt2\n"))


@pytest.mark.e2e
def test_tune_data_searches_the_loader_and_records_the_input_wait(tmp_path: Path) -> None:
    args = TUNE + TINY + ["--data", "synthetic-jpeg:40", "--space", "num_workers",
                          "--budget", "4m", "--max-trials", "3", "--confirm-top", "1",
                          "--confirm-rounds", "2", "--confirm-max-rounds", "2",
                          "--output", "r.json"]
    done = _run(args, tmp_path, timeout=400)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "rocmdoctor: writing 40 synthetic JPEG files into " in done.stderr
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert result["workload"]["data"].endswith("/rocmdoctor/data/synthetic-jpeg-40-v1")
    knob = next(k for k in result["space"]["knobs"] if k["name"] == "num_workers")
    assert knob["baseline"] == "0" and knob["choices"][0] == "0" and len(knob["choices"]) >= 2
    measured = [t for t in result["trials"] if t["state"] == "ok"]
    assert len({t["params"]["num_workers"] for t in measured}) >= 2
    for t in measured:
        assert t["loader"]["num_workers"] == int(t["params"]["num_workers"])
        assert 0.0 <= t["input_share"] <= 1.0
        assert t["input_verdict"] == verdict_of(t["input_share"])
    assert "waited for input" in done.stderr


@pytest.mark.e2e
def test_a_run_cut_off_by_its_timeout_leaves_no_loader_worker_behind(tmp_path: Path) -> None:
    root = _folder(tmp_path / "images", count=64, classes=2)
    marker = f"rocmdoctor-test-{uuid.uuid4().hex}"
    args = BENCH + TINY + ["--data", str(root), "--set", "num_workers=2", "--set",
                           "persistent_workers=true", "--steps", "100000", "--timeout", "15"]
    done = _run(args, tmp_path, ROCMDOCTOR_TEST_MARK=marker)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "rocmdoctor: error: the benchmark timed out: " in done.stderr
    assert "first step " in done.stderr  # the loader had started its workers
    assert processes_with(marker) == []


def test_gpu_decoding_hands_over_the_files_bytes_read_without_torchvision(
        tmp_path: Path) -> None:
    # A loader worker forked after CUDA started loads no torchvision extension: the bytes
    # are read with open() (with 8 workers on the H200 the first batch never came).
    torch = pytest.importorskip("torch")
    folder = tmp_path / "a"
    folder.mkdir()
    payload = bytes(range(256)) * 3
    (folder / "x.jpg").write_bytes(payload)
    script = ("import sys; from rocmdoctor.tuners.bench.data import ImageFolderData\n"
              f"item, label = ImageFolderData({str(tmp_path)!r}, 224, raw=True)[0]\n"
              "print(item.dtype, len(item), bytes(item.tolist()) == "
              f"{payload!r}, label, 'torchvision' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["torch.uint8", "768", "True", "0", "False"], done.stderr
    assert torch.__version__
