"""Jobs: evaluations as queued work, on one machine or many.

The queue (the database is the truth), how a waiting job is announced (``dispatch``:
polling in process, or Celery), leases that survive a dead worker, the worker pool and the
Celery worker, heartbeats and the watch on the parts a worker needs (``faults``). A job
runs one dataset with :func:`evaluator.evaluation.evaluate_dataset`; nothing in the pure
evaluation modules imports this package (the import-linter contract says so).
"""
