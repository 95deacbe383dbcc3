"""Bank authoring: the generator, the validation gates, the exploit audit and the screen evaluation.

They sit above the bank format (``apiflow.bank``) and the agent loop because they run real trials
against the banks they make; the format itself, which every trial reads, depends on none of them.
"""
