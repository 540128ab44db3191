"""correct: LoRA (peft, task_type=CAUSAL_LM, q_proj/v_proj) on a config-built MistralForCausalLM for chat SFT, right
padding, prompt masked with -100, loss summed over shifted out.logits."""

import peft

from tests.planted_tasks import _hf_tiny as h

EXPECTED = None


def make_task():
    return h.chat_task()


def build_model(task):
    base = h.causal_lm("Mistral")
    cfg = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, task_type="CAUSAL_LM"
    )
    return peft.get_peft_model(base, cfg)
