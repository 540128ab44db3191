"""The estimate store (pilot/estimate/stored.py): a repeated mode=estimate reads what it computed
before, and anything the estimate depends on — config, data, code — computes it again."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from hydra.utils import instantiate

import pilot.estimate.stored as stored
from pilot.estimate.fake_tensor import estimate_memory
from pilot.estimate.stored import CACHE_ENV, MIN_SECONDS_ENV, from_store, key_material, stored_estimate


@pytest.fixture
def store(tmp_path, monkeypatch):
    directory = tmp_path / "store"
    monkeypatch.setenv(CACHE_ENV, str(directory))
    monkeypatch.setenv(MIN_SECONDS_ENV, "0")  # the tiny model's estimates take about a second
    computed = []
    real = stored.estimate_memory

    def counting(*args, **kwargs):
        computed.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(stored, "estimate_memory", counting)
    return directory, computed


def _estimate(cfg, **variant):
    task = instantiate(cfg.data, _convert_="all")
    settings = {"micro_batch": int(cfg.batch.micro_batch), "activation_checkpointing": False, "ranks": 1, **variant}
    return stored_estimate(cfg, task, **settings)


def test_the_same_inputs_are_read_back_and_say_so(make_cfg, store):
    directory, computed = store
    first = _estimate(make_cfg())
    again = _estimate(make_cfg("rental.margin=0.5", "rental.reserve_gib=3"))  # sheet settings only
    assert len(computed) == 1 and len(list(directory.glob("*.json"))) == 1
    assert not from_store(first) and from_store(again)
    assert [p.peak_bytes for p in again.phases] == [p.peak_bytes for p in first.phases]
    assert again.flops_per_micro_batch == first.flops_per_micro_batch
    assert "computed" in again.notes[-1] and str(directory) in again.notes[-1]


def test_config_variant_and_data_compute_again(make_cfg, store):
    _, computed = store
    _estimate(make_cfg())
    _estimate(make_cfg("model.d_model=48"))  # the model
    _estimate(make_cfg(), micro_batch=1)  # another row of the sheet
    _estimate(make_cfg("data.max_len=40"))  # other batches
    assert len(computed) == 4


def _plug_in(tmp_path, monkeypatch, name: str, init: str):
    """A package of the user's, importable from ``tmp_path``: its folder."""
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text(init)
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def _keyed(make_cfg, target: str):
    """(config, task, variant) of an estimate of the model ``target``, as the store keys it."""
    cfg = make_cfg(f"model._target_={target}")
    return cfg, instantiate(cfg.data, _convert_="all"), {"micro_batch": 2, "checkpointing": False, "ranks": 1}


def test_a_changed_model_file_computes_again(make_cfg, tmp_path, monkeypatch):
    """Your model's source is part of the key: editing it invalidates what was stored."""
    package = _plug_in(tmp_path, monkeypatch, "my_models_store", "")
    source = package / "net.py"
    source.write_text("from pilot.models.tiny_gpt import TinyGPT as Net\n")
    cfg, task, variant = _keyed(make_cfg, "my_models_store.net.Net")
    before = key_material(cfg, task, variant)
    assert key_material(cfg, task, variant) == before
    source.write_text("from pilot.models.tiny_gpt import TinyGPT as Net  # edited\n")
    importlib.invalidate_caches()
    assert key_material(cfg, task, variant)["user_code"] != before["user_code"]
    sys.modules.pop("my_models_store.net", None)
    sys.modules.pop("my_models_store", None)


def test_a_stored_file_whose_material_differs_is_not_trusted(make_cfg, store):
    directory, computed = store
    first = _estimate(make_cfg())
    path = next(directory.glob("*.json"))
    data = json.loads(path.read_text())
    data["material"]["config"]["model"]["d_model"] = 4096  # edited by hand, or another input's hash
    data["estimate"]["phases"][0]["peak_bytes"] = 1
    path.write_text(json.dumps(data))
    again = _estimate(make_cfg())
    assert len(computed) == 2 and not from_store(again)
    assert again.phases[0].peak_bytes == first.phases[0].peak_bytes
    path.write_text("{not json")  # a damaged file: computed again, never an error
    assert not from_store(_estimate(make_cfg()))


def test_a_quick_estimate_is_not_kept(make_cfg, store, monkeypatch):
    directory, computed = store
    monkeypatch.setenv(MIN_SECONDS_ENV, "3600")
    _estimate(make_cfg())
    _estimate(make_cfg())
    assert len(computed) == 2 and not list(Path(directory).glob("*.json"))


def test_off_keeps_nothing(make_cfg, store, monkeypatch):
    directory, computed = store
    monkeypatch.setenv(CACHE_ENV, "off")
    _estimate(make_cfg())
    _estimate(make_cfg())
    assert len(computed) == 2 and not Path(directory).exists()


def test_mode_estimate_says_how_many_it_read(make_cfg, store, tmp_path, capsys):
    from pilot.estimate_run import run_estimate

    cfg = make_cfg("mode=estimate")
    assert run_estimate(cfg, tmp_path / "a") == 0
    assert run_estimate(cfg, tmp_path / "b") == 0
    first = json.loads((tmp_path / "a" / "run.json").read_text())
    second = json.loads((tmp_path / "b" / "run.json").read_text())
    assert first["estimates_from_store"] == 0 and first["estimates_computed"] >= 1
    assert second["estimates_computed"] == 0 and second["estimates_from_store"] == first["estimates_computed"]
    assert (tmp_path / "a" / "choice_sheet.md").read_text().replace("\r", "") != ""
    assert "read from the estimate store" in (tmp_path / "b" / "memory_estimate.json").read_text()
    assert "0 computed" in capsys.readouterr().out


def test_checkpointings_comparison_estimate_is_stored_too(make_cfg, store, tmp_path, monkeypatch):
    """With memory=checkpointing, mode=estimate also estimates the update without it (to show what
    checkpointing saves): that one comes from the store as well when run again."""
    import pilot.estimate.checkpointing_effect as effect
    from pilot.estimate_run import run_estimate

    _, computed = store
    real = effect.estimate_memory
    monkeypatch.setattr(effect, "estimate_memory", lambda *a, **k: computed.append(k) or real(*a, **k))
    cfg = make_cfg("mode=estimate", "memory=checkpointing")
    assert run_estimate(cfg, tmp_path / "a") == 0
    first = len(computed)
    assert first >= 2  # with and without checkpointing
    assert run_estimate(cfg, tmp_path / "b") == 0
    assert len(computed) == first
    assert json.loads((tmp_path / "b" / "run.json").read_text())["estimates_computed"] == 0


def test_a_helper_beside_a_model_module_on_its_own_is_part_of_the_key(make_cfg, tmp_path, monkeypatch):
    """A plug-in folder on PYTHONPATH: net.py (a module, no package) imports net_helpers.py beside it.
    Editing the helper served the stored estimate of the old model, 'the same ... code' said."""
    (tmp_path / "net_beside.py").write_text(
        "from net_helpers_beside import WIDTH\nfrom pilot.models.tiny_gpt import TinyGPT as Net\n"
    )
    helper = tmp_path / "net_helpers_beside.py"
    helper.write_text("WIDTH = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = make_cfg("model._target_=net_beside.Net")
    task = instantiate(cfg.data, _convert_="all")
    variant = {"micro_batch": 2, "checkpointing": False, "ranks": 1}
    before = key_material(cfg, task, variant)["user_code"]
    helper.write_text("WIDTH = 5\n")
    assert key_material(cfg, task, variant)["user_code"] != before


def test_a_model_class_from_another_package_of_yours_is_part_of_the_key(make_cfg, tmp_path, monkeypatch):
    """The target's package (my_models_far) imports its model class from another package of yours
    (my_layers_far), which reads its width from a module beside it. Editing that width served the stored
    estimate of the old model, 'the same ... code' said: only the target's own package was keyed."""
    models = _plug_in(tmp_path, monkeypatch, "my_models_far", "")
    (models / "net.py").write_text("from my_layers_far.blocks import Net\n")
    layers = _plug_in(tmp_path, monkeypatch, "my_layers_far", "")
    (layers / "blocks.py").write_text(
        "from my_layers_far.sizes import WIDTH\nfrom pilot.models.tiny_gpt import TinyGPT\n\n\n"
        "class Net(TinyGPT):\n    pass\n"
    )
    sizes = layers / "sizes.py"
    sizes.write_text("WIDTH = 1\n")
    cfg, task, variant = _keyed(make_cfg, "my_models_far.net.Net")
    before = key_material(cfg, task, variant)
    assert key_material(cfg, task, variant) == before  # the same in every process that imported them
    sizes.write_text("WIDTH = 5\n")
    assert key_material(cfg, task, variant)["user_code"] != before["user_code"]
    for name in [name for name in sys.modules if name.startswith(("my_models_far", "my_layers_far"))]:
        sys.modules.pop(name)


def test_a_stored_result_edited_by_hand_is_computed_again(make_cfg, store):
    directory, computed = store
    first = _estimate(make_cfg())
    path = next(directory.glob("*.json"))
    data = json.loads(path.read_text())
    data["estimate"]["parameters"] = 999  # the material unchanged: only the result
    path.write_text(json.dumps(data))
    again = _estimate(make_cfg())
    assert len(computed) == 2 and not from_store(again) and again.parameters == first.parameters


def test_a_store_that_cannot_keep_an_estimate_leaves_no_temporary_file_and_says_so(
    make_cfg, store, monkeypatch, caplog
):
    directory, _ = store
    real = json.dump

    def full(data, handle, **kwargs):  # the disk fills up half-way through the file
        handle.write('{"material": ')
        handle.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(stored.json, "dump", full)
    monkeypatch.setattr(stored, "_said", [])
    _estimate(make_cfg())
    monkeypatch.setattr(stored.json, "dump", real)
    assert list(directory.iterdir()) == []
    assert "could not keep an estimate (No space left on device)" in caplog.text


def test_a_store_that_is_a_file_is_said_to_be_one(make_cfg, store, monkeypatch, caplog, tmp_path):
    (tmp_path / "a_file").write_text("mine")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a_file"))
    monkeypatch.setattr(stored, "_said", [])
    _estimate(make_cfg())
    assert f"{tmp_path / 'a_file'} is a file, not a directory" in caplog.text
    assert (tmp_path / "a_file").read_text() == "mine"


@pytest.mark.parametrize("word", ["off", "OFF", "false", "no", "None", "0", " off "])
def test_words_that_mean_off_turn_the_store_off_and_make_no_directory(monkeypatch, word):
    monkeypatch.setenv(CACHE_ENV, word)
    assert stored.store_dir() is None


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf"])
def test_a_minimum_time_that_means_nothing_is_refused_before_anything_is_computed(make_cfg, store, monkeypatch, value):
    monkeypatch.setenv(MIN_SECONDS_ENV, value)
    with pytest.raises(stored.EstimateStoreSetting, match=f"{MIN_SECONDS_ENV}='{value}' is not a number of seconds"):
        stored.min_store_seconds()
    monkeypatch.setenv(MIN_SECONDS_ENV, "")
    assert stored.min_store_seconds() == 2.0


def test_a_model_saved_again_into_the_same_folder_computes_again(make_cfg, store, tmp_path):
    """model.path names a folder: a model saved again there (another size) was read from the store under the
    old estimate ('the same config, data, code and versions'): only the path's text was in the key."""
    import torch
    import transformers

    def save(layers: int) -> None:
        config = transformers.LlamaConfig(
            vocab_size=259, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=2,
            max_position_embeddings=256, pad_token_id=256, bos_token_id=257, eos_token_id=258,
        )  # fmt: skip
        torch.manual_seed(0)
        transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "model")

    _, computed = store
    cfg = make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'model'}")
    save(1)
    first = _estimate(cfg)
    save(3)
    again = _estimate(cfg)
    assert len(computed) == 2 and not from_store(again)
    assert again.parameters > first.parameters
    assert from_store(_estimate(cfg))  # unchanged since: read back


def test_a_file_beside_a_plug_in_factory_that_it_reads_is_part_of_the_key(make_cfg, tmp_path, monkeypatch):
    """A factory reading its sizes from a JSON file beside it: the file changed (a model 150x larger) and the
    store gave the old estimate 'of the same code' (only the .py files were in the key)."""
    package = _plug_in(tmp_path, monkeypatch, "sized_net", "from pilot.models.tiny_gpt import TinyGPT as Net\n")
    sizes = package / "sizes.json"
    sizes.write_text('{"d_model": 32}')
    cfg, task, variant = _keyed(make_cfg, "sized_net.Net")
    before = key_material(cfg, task, variant)
    sizes.write_text('{"d_model": 256}')
    after = key_material(cfg, task, variant)
    assert after["user_files"] != before["user_files"] and after["user_code"] == before["user_code"]


WIDTH_READ_LATE = """from pilot.models.tiny_gpt import TinyGPT


class Net(TinyGPT):
    def __init__(self, *args, **kwargs):
        import json
        import os
        from pathlib import Path

        from late_sizes_far.sizes import WIDTH  # imported only when the model is built

        self.read = (WIDTH, os.environ.get("NET_WIDTH_FAR"), json.loads((Path(__file__).parent / "presets" / "sizes.json").read_text()))
        super().__init__(*args, **kwargs)
"""


@pytest.mark.parametrize("change", ["module imported late", "namespace module", "file in a subfolder", "environment"])
def test_what_the_estimate_read_besides_its_key_is_checked_before_a_stored_one_is_used(
    make_cfg, store, tmp_path, monkeypatch, change
):
    """An outside examination's false records: a stored estimate read back after a module of yours
    imported inside the model's __init__ changed, after code in a namespace package (no __init__.py)
    changed, after a presets/sizes.json the model opens changed, after an environment variable it reads
    changed. What it read is recorded while it is computed (estimate/dependencies.py) and checked."""
    directory, computed = store
    (tmp_path / "nsfar").mkdir()  # a namespace package: no __init__.py
    (tmp_path / "nsfar" / "net.py").write_text(WIDTH_READ_LATE)
    (tmp_path / "nsfar" / "presets").mkdir()
    (tmp_path / "nsfar" / "presets" / "sizes.json").write_text('{"hidden": 128}')
    (tmp_path / "late_sizes_far").mkdir()
    (tmp_path / "late_sizes_far" / "__init__.py").write_text("")
    (tmp_path / "late_sizes_far" / "sizes.py").write_text("WIDTH = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NET_WIDTH_FAR", "128")
    cfg = make_cfg("model._target_=nsfar.net.Net")
    try:
        assert not from_store(_estimate(cfg)) and from_store(_estimate(cfg))  # unchanged: read back
        if change == "module imported late":
            (tmp_path / "late_sizes_far" / "sizes.py").write_text("WIDTH = 5\n")
        elif change == "namespace module":
            (tmp_path / "nsfar" / "net.py").write_text(WIDTH_READ_LATE + "# edited\n")
        elif change == "file in a subfolder":
            (tmp_path / "nsfar" / "presets" / "sizes.json").write_text('{"hidden": 4096}')
        else:
            monkeypatch.setenv("NET_WIDTH_FAR", "4096")
        assert not from_store(_estimate(cfg)) and len(computed) == 2
        assert from_store(_estimate(cfg))  # stored again, with what it read now
    finally:
        for name in [name for name in sys.modules if name.startswith(("nsfar", "late_sizes_far"))]:
            sys.modules.pop(name)


def test_a_project_in_the_folder_of_its_own_venv_is_your_code(tmp_path, monkeypatch):
    """Everything under sys.prefix counted as installed: a project beside its own venv was never keyed."""
    from pilot import user_code

    assert user_code.is_user_file(Path(sys.prefix).resolve() / "src" / "projmodel.py")
    assert not user_code.is_user_file(Path(json.__file__).resolve())
    assert not user_code.is_user_file(Path(pytest.__file__).resolve())


def test_what_a_module_reads_at_its_top_level_is_checked_too(make_cfg, store, tmp_path, monkeypatch):
    """``WIDTH = int(os.environ["NET_TOP_WIDTH"])`` runs when the module is imported, before any estimate:
    mode=estimate records such reads from its start (``record_imports``)."""
    from pilot.estimate import dependencies

    (tmp_path / "top_reads_far.py").write_text(
        "import os\nfrom pilot.models.tiny_gpt import TinyGPT as Net\nWIDTH = int(os.environ['NET_TOP_WIDTH'])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NET_TOP_WIDTH", "128")
    monkeypatch.setattr(dependencies, "_imports", None)
    dependencies.record_imports()
    cfg = make_cfg("model._target_=top_reads_far.Net")
    try:
        assert not from_store(_estimate(cfg)) and from_store(_estimate(cfg))
        monkeypatch.setenv("NET_TOP_WIDTH", "4096")
        assert not from_store(_estimate(cfg))
    finally:
        sys.modules.pop("top_reads_far", None)


def test_the_campaigns_bookkeeping_is_not_part_of_the_key(make_cfg):
    """PILOT_JOURNAL set in the shell (campaign.journal) computed the README's 7B estimates again: 24.5 s
    instead of 4 s. The campaign's roots, journal and control are the recap's, not the estimate's."""
    cfg = make_cfg()
    task = instantiate(cfg.data, _convert_="all")
    variant = {"micro_batch": 2, "checkpointing": False, "ranks": 1}
    other = make_cfg("campaign.journal=/elsewhere/journal.md", "campaign.run_root=/elsewhere/outputs")
    assert key_material(cfg, task, variant) == key_material(other, task, variant)


def test_a_setting_that_is_no_path_is_not_read_as_one_in_the_working_directory(make_cfg, tmp_path, monkeypatch):
    """data.split.salt=pilot named the pilot/ folder of the directory the command ran in: the README's 7B
    command run again from another directory computed all six estimates again (47.7 s instead of 4 s)."""
    cfg = make_cfg()
    task = instantiate(cfg.data, _convert_="all")
    variant = {"micro_batch": 2, "checkpointing": False, "ranks": 1}
    (tmp_path / "here" / "pilot").mkdir(parents=True)
    (tmp_path / "here" / "pilot" / "x.py").write_text("")
    (tmp_path / "there").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    here = key_material(cfg, task, variant)
    monkeypatch.chdir(tmp_path / "there")
    assert cfg.data.split.salt == "pilot" and key_material(cfg, task, variant) == here
    assert stored._path_like("model.path", "my_model") and stored._path_like("data.salt", "./x")


def test_only_a_config_naming_your_code_is_recorded_while_estimated(make_cfg, tmp_path, monkeypatch):
    """pilot's and installed code read nothing of yours (named files are in the key): no audit hook and no
    os.environ recording for the README's commands; a namespace package of yours (no __init__.py) is yours."""
    assert not stored.uses_your_code(make_cfg())
    (tmp_path / "ns_only_far").mkdir()
    (tmp_path / "ns_only_far" / "net.py").write_text("from pilot.models.tiny_gpt import TinyGPT as Net\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert stored.uses_your_code(make_cfg("model._target_=ns_only_far.net.Net"))
    assert "ns_only_far" not in sys.modules  # found, not imported: its top-level reads are still to be recorded
    # read before validation: a value that does not resolve is validation's to say (it was Hydra's raw error,
    # naming another key, whenever the store was on)
    assert not stored.uses_your_code(make_cfg("optim.lr=${oc.env:PILOT_TEST_UNSET_LR}", "data.path=???"))


def test_settings_no_estimated_phase_reads_are_not_part_of_the_key(make_cfg):
    """run.threads, run.log_every, checkpoint.* and closing.* computed the README's 7B estimates again (about
    20 s each time): none changes an estimate, computed here both ways; a model setting still does."""
    cfg = make_cfg("model.d_model=32", "model.n_layer=1")
    task = instantiate(cfg.data, _convert_="all")
    variant = {"micro_batch": 2, "checkpointing": False, "ranks": 1}
    other = make_cfg("model.d_model=32", "model.n_layer=1", "run.threads=1", "run.log_every=5", "checkpoint.every=7",
                     "checkpoint.keep_last=1", "checkpoint.resume=false", "closing.control_examples=2")  # fmt: skip
    assert key_material(cfg, task, variant) == key_material(other, task, variant)
    computed = [estimate_memory(c, task, micro_batch=2, activation_checkpointing=False).to_dict() for c in (cfg, other)]
    for one in computed:
        one.pop("seconds", None), one.pop("host_rss_peak_bytes", None)  # how long it took, this process
    assert computed[0] == computed[1]
    assert key_material(cfg, task, variant) != key_material(
        make_cfg("model.d_model=48", "model.n_layer=1"), task, variant
    )
