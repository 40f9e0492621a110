"""Ahead of time, before traffic: warm a bank with the seeds' outcomes (`warm`) and evolve its best arms
(`evolve`). May import solving and everything below it.
"""
