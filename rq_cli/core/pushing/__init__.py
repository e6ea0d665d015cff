"""Bulk push: pipelined batches, and pushes as transactions.
"""
