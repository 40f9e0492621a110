"""What every part shares and that imports nothing of ours: one-line errors (`errors`), token counts where
unknown stays unknown (`usage`), JSON and YAML from untrusted text with their nesting capped (`safe_loading`).
"""
