"""The compiled parts, both optional: where they cannot be built (no C compiler), tlnetron
installs without them and does the same work in Python (the modules using them say so).

* tlnetron.read._onepass: the activation statistics' single read (tlnetron.read.stats);
* tlnetron.build._rows: the companion's value rows and its section survey
  (tlnetron.build.companion, tlnetron.check.validation).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Sums may be regrouped (vector lanes), and NaN / Inf are found by their bits, so the
# compiler may treat the single read's arithmetic as finite: a tensor holding NaN or Inf is
# measured again. The rows' survey sums values that may not be finite: no such flags there.
_FINITE_MATH = [
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fno-signed-zeros",
    "-fassociative-math",
    "-freciprocal-math",
    "-ffinite-math-only",
]
_GCC_FLAGS = {"tlnetron.read._onepass": ["-O3", "-pthread", *_FINITE_MATH], "tlnetron.build._rows": ["-O2"]}
# the single read starts its own native thread (tlnetron.read._onepass.start)
_GCC_LINK = {"tlnetron.read._onepass": ["-pthread"], "tlnetron.build._rows": []}


class _BuildExt(build_ext):
    def build_extensions(self) -> None:
        msvc = self.compiler.compiler_type == "msvc"
        for ext in self.extensions:
            ext.extra_compile_args = ["/O2"] if msvc else _GCC_FLAGS[ext.name]
            if not msvc:
                ext.libraries = ["m"]
                ext.extra_link_args = _GCC_LINK[ext.name]
        super().build_extensions()


setup(
    ext_modules=[
        Extension("tlnetron.read._onepass", ["src/tlnetron/read/_onepass.c"], optional=True),
        Extension("tlnetron.build._rows", ["src/tlnetron/build/_rows.c"], optional=True),
    ],
    cmdclass={"build_ext": _BuildExt},
)
