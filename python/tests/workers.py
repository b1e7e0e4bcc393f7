"""What worker processes run in test_workers.py (a module they can import by name)."""


def run_one(session, feeds):
    """Runs one item of a batch on a session that came in a pickle."""
    return session.run(None, feeds)


_SESSION = None


def keep(session):
    """A multiprocessing.Pool initializer: the session, unpickled once per worker."""
    global _SESSION
    _SESSION = session


def run_kept(feeds):
    """Runs one item on the session the worker keeps."""
    return _SESSION.run(None, feeds)
