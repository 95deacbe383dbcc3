"""The agent scaffold: prompts, the ReAct loop and one trial end to end."""

from apiflow.agent.ids import derived_seed, run_id_for, trial_id_for, trial_seed
from apiflow.agent.loop import LoopOutcome, TrialLimits, run_loop
from apiflow.agent.prompts import PROMPT_HASH, SYSTEM_PROMPT, card_instruction, initial_messages, user_message
from apiflow.agent.trial import TrialSpec, run_trial

__all__ = [
    "PROMPT_HASH",
    "SYSTEM_PROMPT",
    "LoopOutcome",
    "TrialLimits",
    "TrialSpec",
    "card_instruction",
    "derived_seed",
    "initial_messages",
    "run_id_for",
    "run_loop",
    "run_trial",
    "trial_id_for",
    "trial_seed",
    "user_message",
]
