"""The one compiled part: tlnetron.read._onepass, the activation statistics' single read.

Optional: where it cannot be built (no C compiler), tlnetron installs without it and reads
the statistics with torch and numpy instead (tlnetron.read.stats says which it uses).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Sums may be regrouped (vector lanes), and NaN / Inf are found by their bits, so the
# compiler may treat the arithmetic as finite: a tensor holding NaN or Inf is measured again.
_GCC_FLAGS = [
    "-O3",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fno-signed-zeros",
    "-fassociative-math",
    "-freciprocal-math",
    "-ffinite-math-only",
]


class _BuildExt(build_ext):
    def build_extensions(self) -> None:
        flags = ["/O2"] if self.compiler.compiler_type == "msvc" else _GCC_FLAGS
        for ext in self.extensions:
            ext.extra_compile_args = flags
        super().build_extensions()


setup(
    ext_modules=[Extension("tlnetron.read._onepass", ["src/tlnetron/read/_onepass.c"], optional=True)],
    cmdclass={"build_ext": _BuildExt},
)
