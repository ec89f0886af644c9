"""jupyter_kernel_test's conformance suite against the tilebook kernel
(CPU backend), with every sample attribute the suite offers."""
import unittest

import jupyter_kernel_test as jkt


class TilebookKernelTests(jkt.KernelTests):
    kernel_name = "tilebook"
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys\nprint('oops', file=sys.stderr)"

    completion_samples = [
        {"text": "pri", "matches": {"print"}},
        {"text": "import tri", "matches": {"triton", "triton.language", "triton.runtime", "triton.testing"}},
    ]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n    return x\n\n"]
    incomplete_code_samples = ["def f(x):", "x = (1 +", "for i in range(3):"]
    invalid_code_samples = ["x = = 1", "1 +* 2"]

    code_page_something = "print?"
    code_generate_error = "raise ValueError('boom')"
    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": "'tile' + 'book'", "result": "'tilebook'"},
        {"code": "[i * i for i in range(4)]", "result": "[0, 1, 4, 9]"},
    ]
    code_display_data = [{"code": "display(3)", "mime": "text/plain"}]
    code_history_pattern = "6*"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "print"
    code_clear_output = "clear_output()"


class TilebookIopubWelcome(jkt.IopubWelcomeTests):
    kernel_name = "tilebook"
    support_iopub_welcome = True


if __name__ == "__main__":
    unittest.main()
