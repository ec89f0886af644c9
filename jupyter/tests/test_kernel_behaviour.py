"""The tilebook kernel beyond the conformance suite: a forged message is
dropped, an interrupt stops a busy cell within 2 s with the namespace kept,
tensors and kernels work, and a notebook runs under nbclient."""
import json
import os
import time
import unittest

import jupyter_client
import nbclient
import nbformat
from jupyter_client.session import Session


def start():
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="tilebook")
    return km, kc


def run(kc, code, timeout=60):
    outputs = []
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=outputs.append)
    return reply["content"], outputs


class KernelBehaviour(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start()

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)

    def test_a_message_with_a_wrong_signature_is_not_executed(self):
        run(self.kc, "forged = 0")
        # Same channel and session, signed with a key the kernel does not hold.
        forger = Session(key=b"not-the-key", username=self.kc.session.username)
        msg = forger.msg("execute_request", {
            "code": "forged = 1", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True,
        })
        forger.send(self.kc.shell_channel.socket, msg)
        time.sleep(1.0)
        content, outputs = run(self.kc, "forged")
        self.assertEqual(content["status"], "ok")
        results = [o for o in outputs if o["msg_type"] == "execute_result"]
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "0")

    def test_interrupt_returns_control_within_2_s_and_keeps_the_namespace(self):
        run(self.kc, "kept = 41")
        msg_id = self.kc.execute("while True:\n    pass\n")
        time.sleep(0.5)
        t0 = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=10)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=10)
        elapsed = time.monotonic() - t0
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        self.assertLess(elapsed, 2.0)
        content, outputs = run(self.kc, "kept + 1")
        results = [o for o in outputs if o["msg_type"] == "execute_result"]
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "42")

    def test_a_kernel_launch_and_its_timing_footer(self):
        code = (
            "import torch, triton\nimport triton.language as tl\n"
            "@triton.jit\ndef double(x_ptr, n, B: tl.constexpr):\n"
            "    o = tl.arange(0, B)\n"
            "    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)\n"
            "x = torch.ones(10, device='cuda')\ndouble[(1,)](x, 10, B=16)\nx.sum().item()\n"
        )
        content, outputs = run(self.kc, code)
        self.assertEqual(content["status"], "ok")
        kinds = [o["msg_type"] for o in outputs]
        results = [o for o in outputs if o["msg_type"] == "execute_result"]
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "20.0")
        footers = [o for o in outputs if o["msg_type"] == "display_data"
                   and "[double] grid (1, 1, 1)" in o["content"]["data"]["text/plain"]]
        self.assertEqual(len(footers), 1, kinds)

    def test_outputs_arrive_in_order_while_the_cell_runs(self):
        code = "print('first')\ndisplay(2)\nprint('third')\nimport time\n4"
        content, outputs = run(self.kc, code)
        kinds = [(o["msg_type"], o["content"].get("text", "") or str(o["content"].get("data", {}).get("text/plain", "")))
                 for o in outputs if o["msg_type"] in ("stream", "display_data", "execute_result")]
        self.assertEqual(kinds, [("stream", "first\n"), ("display_data", "2"),
                                 ("stream", "third\n"), ("execute_result", "4")])

    def test_inspect_shows_a_kernels_specializations(self):
        run(self.kc, "import triton, triton.language as tl\n@triton.jit\ndef k(p, B: tl.constexpr):\n    tl.store(p + tl.arange(0, B), 1.0)\nimport torch\nk[(1,)](torch.zeros(8), B=8)")
        code = "k[(1,)]"
        reply = self.kc.inspect(code, 1, reply=True, timeout=10)["content"]
        self.assertTrue(reply["found"])
        self.assertIn("Compiled specializations (1)", reply["data"]["text/plain"])

    def test_completion_cursor_counts_code_points(self):
        run(self.kc, "import triton.language as tl")
        code = "é = 1; tl.ara"
        reply = self.kc.complete(code, len(code), reply=True, timeout=10)["content"]
        self.assertEqual(reply["matches"], ["arange"])
        self.assertEqual(reply["cursor_start"], len(code) - 3)
        self.assertEqual(reply["cursor_end"], len(code))


class RestartAndShutdown(unittest.TestCase):
    def test_restart_gives_a_fresh_namespace_and_shutdown_ends_the_process(self):
        km, kc = start()
        try:
            run(kc, "before_restart = 1")
            km.restart_kernel(now=False)
            kc.wait_for_ready(timeout=30)
            content, outputs = run(kc, "before_restart")
            self.assertEqual(content["ename"], "NameError")
            content, outputs = run(kc, "6 * 7")
            self.assertEqual(content["status"], "ok")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)
        self.assertFalse(km.is_alive())


    def test_shutdown_ends_the_process_while_a_host_loop_runs(self):
        km, kc = start()
        try:
            msg_id = kc.execute("while True:\n    pass")
            time.sleep(1.0)
            t0 = time.time()
            km.request_shutdown(restart=False)
            while km.is_alive() and time.time() - t0 < 5:
                time.sleep(0.05)
            elapsed = time.time() - t0
            self.assertFalse(km.is_alive(), "the kernel still runs 5 s after shutdown_request")
            self.assertLess(elapsed, 1.5)
        finally:
            kc.stop_channels()
            if km.is_alive():
                km.shutdown_kernel(now=True)


class NotebookUnderNbclient(unittest.TestCase):
    def test_every_tutorial_runs_through_the_kernel(self):
        tutorials = os.path.join(os.path.dirname(__file__), "..", "..", "tutorials")
        names = sorted(n for n in os.listdir(tutorials) if n.endswith(".ipynb"))
        self.assertGreaterEqual(len(names), 1)
        for name in names:
            nb = nbformat.read(os.path.join(tutorials, name), as_version=4)
            nbclient.NotebookClient(nb, kernel_name="tilebook", timeout=300).execute()
            errors = [o for c in nb.cells if c.cell_type == "code"
                      for o in c.outputs if o.get("output_type") == "error"]
            self.assertEqual(errors, [], name)

    def test_perf_report_plot_error_and_recovery(self):
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell(
                "import torch, triton\nimport triton.language as tl\n"
                "@triton.jit\ndef add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
                "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                "    m = o < n\n"
                "    tl.store(out_ptr + o, tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)\n"),
            nbformat.v4.new_code_cell(
                "x = torch.rand(1000, device='cuda')\ny = torch.rand(1000, device='cuda')\n"
                "out = torch.empty_like(x)\nadd[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)\n"
                "torch.allclose(out, x + y)"),
            nbformat.v4.new_code_cell(
                "@triton.testing.perf_report(triton.testing.Benchmark(\n"
                "    x_names=['size'], x_vals=[256, 1024], line_arg='provider',\n"
                "    line_vals=['tilebook'], line_names=['tilebook'], styles=[('blue', '-')],\n"
                "    ylabel='ms', plot_name='add', args={}))\n"
                "def bench(size, provider):\n"
                "    a = torch.rand(size, device='cuda')\n"
                "    b = torch.empty_like(a)\n"
                "    return triton.testing.do_bench(lambda: add[(triton.cdiv(size, 256),)](a, a, b, size, BLOCK=256), warmup=1, rep=2)\n"
                "bench.run(show_plots=True, print_data=True)"),
            nbformat.v4.new_code_cell("undefined_thing + 1"),
            nbformat.v4.new_code_cell("print('still working', out.shape)"),
        ]
        client = nbclient.NotebookClient(nb, kernel_name="tilebook", timeout=120, allow_errors=True)
        client.execute()
        outs = [c.outputs for c in nb.cells]
        results = [o for o in outs[1] if o["output_type"] == "execute_result"]
        self.assertEqual(results[0]["data"]["text/plain"], "True")
        svgs = [o for o in outs[2] if o.get("output_type") == "display_data" and "image/svg+xml" in o.get("data", {})]
        self.assertEqual(len(svgs), 1, outs[2])
        self.assertIn("<svg", svgs[0]["data"]["image/svg+xml"])
        self.assertEqual(outs[3][0]["output_type"], "error")
        self.assertEqual(outs[3][0]["ename"], "NameError")
        self.assertEqual(outs[4][0]["text"], "still working torch.Size([1000])\n")


if __name__ == "__main__":
    unittest.main()
