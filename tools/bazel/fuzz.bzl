"""libFuzzer binaries built with Debian's clang-16.

The project's C++ toolchain is g++, which lacks -fsanitize=fuzzer, so the
fuzz targets are compiled by clang in a genrule: every .cpp/.cc among `srcs`
is compiled (two at a time) with ASan+UBSan and coverage, and each target in
`targets` (a .cpp of `srcs` with LLVMFuzzerTestOneInput) is linked with the
other objects.
"""

def tir_fuzzers(name, targets, srcs):
    outs = [t.split("/")[-1][:-len(".cpp")] for t in targets]
    cmd = """
set -e
objs=$$(mktemp -d)
flags="-std=c++17 -O1 -g -w -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr \
  -I. -I$(GENDIR) -I$(GENDIR)/proto -isystem /usr/lib/llvm-16/include -isystem /usr/local/cuda/include"
targets="%s"
for f in $(SRCS); do
  case $$f in *.cpp|*.cc) echo $$f ;; esac
done | xargs -P 2 -I{} sh -c 'clang++-16 '"$$flags"' -c {} -o '"$$objs"'/$$(echo {} | tr / _).o'
libs="-L/usr/lib/llvm-16/lib -Wl,-rpath,/usr/lib/llvm-16/lib -lMLIR -lLLVM-16 $$(pkg-config --libs protobuf absl_status absl_statusor absl_strings absl_str_format absl_cord) -lcrypto -lpthread"
for t in $$targets; do
  main=$$(echo $$t | tr / _).o
  others=""
  for o in $$objs/*.o; do
    skip=0
    for u in $$targets; do [ "$$(basename $$o)" = "$$(echo $$u | tr / _).o" ] && skip=1; done
    [ $$skip = 0 ] && others="$$others $$o"
  done
  out=$(RULEDIR)/$$(basename $$t .cpp)
  clang++-16 -fsanitize=fuzzer,address,undefined -fno-sanitize=vptr $$objs/$$main $$others $$libs -o $$out
done
rm -rf $$objs
""" % " ".join(targets)
    native.genrule(
        name = name,
        srcs = srcs,
        outs = outs,
        cmd = cmd,
        tags = ["no-sandbox"],
    )
