import unittest

from jobs.retry import Backoff
from jobs.scheduler import Job, due


class SchedulerTest(unittest.TestCase):
    def test_intervals(self):
        self.assertEqual(Job("a", "90s").interval, 90)
        self.assertEqual(Job("a", "15m").interval, 900)
        self.assertEqual(Job("a", "2H").interval, 7200)
        self.assertEqual(Job("a", "1d").interval, 86400)
        self.assertEqual(Job("a", " 45 ").interval, 45)

    def test_bad_interval(self):
        for bad in ["", "m", "5w", "1.5h", "-5m", "0s"]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                Job("a", bad).interval

    def test_due(self):
        jobs = [Job("backup", "1h"), Job("ping", "5m"), Job("new", "1d")]
        self.assertEqual(due(jobs, {"backup": 1000, "ping": 1000}, now=1300),
                         ["new", "ping"])


class BackoffTest(unittest.TestCase):
    def test_delays(self):
        b = Backoff("2s", "1m")
        self.assertEqual([b.delay(n) for n in range(1, 7)], [2, 4, 8, 16, 32, 60])

    def test_bad_config(self):
        with self.assertRaises(ValueError):
            Backoff("soon")
