"""The static leaderboard site: read result files, rank them (:mod:`halbench.leaderboard`), render HTML.

Nothing here imports or runs a submission's code; every page is built from files on disk.
"""
