# GT's two commands: `make demo` and `make test` (each installs dependencies and builds first).
PYTHON ?= python3
BUILD  := build

.PHONY: deps build demo test test-cpp test-lit test-python test-fuzz test-gpu-proof test-bundle bench clean

deps:
	bash scripts/install-deps.sh

# Configure + build with CMake/Ninja (ccache), then install the package in editable mode.
build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$$(command -v $(PYTHON))
	cmake --build $(BUILD)
	$(PYTHON) -m pip install -q --no-build-isolation -e . 2>&1 | grep -v "Running pip as the 'root' user" || true

demo: build
	$(PYTHON) examples/fashion_mnist.py

test: build
	$(MAKE) --no-print-directory test-cpp test-lit test-python test-fuzz test-gpu-proof test-bundle

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -E '^lit$$'

test-lit:
	lit -sv $(BUILD)/test

test-python:
	$(PYTHON) -m pytest -q test/python

# libFuzzer harnesses (test/fuzz), built with clang in build-fuzz, GT_FUZZ_SECONDS (60) each.
test-fuzz:
	bash test/fuzz/run.sh

# The GPU proof's dry run (CPU workers), so that scripts/gpu-proof.sh cannot rot.
test-gpu-proof:
	bash scripts/gpu-proof.sh --dry-run $(BUILD)/gpu-proof

# The device bundle (build-static, dist/) and its Python path built from the bundle alone.
test-bundle:
	bash scripts/device-bundle.sh
	bash scripts/check-device-bundle.sh

bench: build
	$(PYTHON) benchmarks/overhead.py
	$(PYTHON) benchmarks/jit.py
	$(PYTHON) benchmarks/scaling.py

clean:
	rm -rf $(BUILD) build-fuzz build-static dist python/gt/_C*.so python/gt/bin
