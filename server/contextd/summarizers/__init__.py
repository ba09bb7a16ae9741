"""Summarizers: offline (extractive, the default), anthropic, openai and remote.

The daemon builds one chain from its settings (`chain.py`):

    summarizer = build_summarizer(settings.summarizer)
    summary = await summarizer.summarize_with_info(request)   # Summary(text, summarizer)

Nothing is imported here on purpose: the provider SDKs take seconds to import, and a
daemon using the offline summarizer never needs them.
"""
