import unittest

from minihttp import Request


class RequestTest(unittest.TestCase):
    def test_method_is_upper_case(self):
        self.assertEqual(Request("https://x.test", method="post").method, "POST")

    def test_full_url_with_params(self):
        req = Request("https://x.test/search").with_param("q", "cats").with_param("page", "2")
        self.assertEqual(req.full_url(), "https://x.test/search?page=2&q=cats")

    def test_full_url_keeps_existing_query(self):
        req = Request("https://x.test/s?a=1").with_param("b", "2")
        self.assertEqual(req.full_url(), "https://x.test/s?a=1&b=2")

    def test_headers_are_not_shared_between_requests(self):
        first = Request("https://x.test/a").with_header("Authorization", "Bearer secret")
        second = Request("https://x.test/b")
        self.assertEqual(first.headers, {"Authorization": "Bearer secret"})
        self.assertEqual(second.headers, {})

    def test_callers_headers_dict_is_not_modified(self):
        mine = {"Accept": "application/json"}
        req = Request("https://x.test", headers=mine).with_header("X-Trace", "1")
        self.assertEqual(mine, {"Accept": "application/json"})
        self.assertEqual(req.headers, {"Accept": "application/json", "X-Trace": "1"})


if __name__ == "__main__":
    unittest.main()
