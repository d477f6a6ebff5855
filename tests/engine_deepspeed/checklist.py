"""The checks of one test script: each printed as it is judged ("ok" or "FAIL" and what it
checks), then a summary line, and the script's exit status (1 when any failed)."""


class Checklist:
    def __init__(self, name):
        self.name = name
        self.checked = []
        self.failures = []

    def expect(self, condition, what):
        self.checked.append(what)
        print(("ok    " if condition else "FAIL  ") + what)
        if not condition:
            self.failures.append(what)

    def finish(self):
        passed = len(self.checked) - len(self.failures)
        print(f"{self.name}: {passed} passed, {len(self.failures)} failed")
        return 1 if self.failures else 0
