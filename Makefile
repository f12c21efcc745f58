# The two commands of the README's Quick start. Each installs what it needs.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Debian tools the tests drive: command -> package.
DEB_TOOLS := dot:graphviz rpm:rpm rpmkeys:rpm rpm2cpio:rpm2cpio cpio:cpio lintian:lintian \
	gpg:gpg gpgv:gpgv apt-get:apt chromium:chromium dnf:dnf strace:strace \
	hipcc:hipcc clang-offload-bundler-15:clang-tools-15 readelf:binutils \
	zypper:zypper rpmlint:rpmlint unshare:util-linux faketime:faketime eatmydata:eatmydata sqv:sqv bwrap:bubblewrap \
	skopeo:skopeo umoci:umoci docker-registry:docker-registry \
	htpasswd:apache2-utils openssl:openssl gdb:gdb gcc:gcc shellcheck:shellcheck

.PHONY: demo test check docs lint bench fuzz realworld system-tools clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,docs]'
	# An editable install leaves the man pages out (data-files): link them where man
	# looks for a venv's bin/ on PATH, so 'man gfxpack' works once it is activated.
	mkdir -p $(VENV)/share/man
	ln -sfn ../../../man $(VENV)/share/man/man1
	touch $@

system-tools:
	@missing=""; for pair in $(DEB_TOOLS); do \
	  command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

DEMO := build/demo

demo: $(STAMP) system-tools
	$(VENV)/bin/gfxpack plan --config examples/package.json --target gfx1100,gfx942,gfx950 \
	    --rocm-version 8.2.0 --quiet
	$(VENV)/bin/gfxpack plan --config examples/package.json --target gfx1100,gfx942,gfx950 \
	    --rocm-version 8.2.0 --format tree --package amdrocm-blas --quiet
	$(PY) examples/generate_artifacts.py $(DEMO)/artifacts
	$(VENV)/bin/gfxpack kpack list '$(DEMO)/artifacts/blas_lib_gfx942/math-libs/BLAS/hipBLAS/stage/.kpack/blas_lib_gfx942.kpack'
	rm -rf $(DEMO)/packages $(DEMO)/gnupg
	# A throwaway signing key (a release uses its own: --sign-key FINGERPRINT).
	mkdir -m 700 -p $(DEMO)/gnupg
	GNUPGHOME=$(DEMO)/gnupg gpg --batch --quiet --passphrase '' --quick-gen-key \
	    'gfxpack demo <demo@example.invalid>' rsa3072 sign never 2>/dev/null
	GNUPGHOME=$(DEMO)/gnupg $(VENV)/bin/gfxpack build --config examples/package.json \
	    --artifacts $(DEMO)/artifacts --out $(DEMO)/packages --rocm-version 8.2.0 \
	    --sign-key demo@example.invalid
	rm -rf $(DEMO)/repo
	# Signed indexes and the public key in the repository; then the lines that set up
	# apt and dnf for it.
	GNUPGHOME=$(DEMO)/gnupg $(VENV)/bin/gfxpack repo --in $(DEMO)/packages --out $(DEMO)/repo \
	    --sign-key demo@example.invalid > $(DEMO)/repo.txt
	cat $(DEMO)/repo.txt
	gpgconf --homedir $(DEMO)/gnupg --kill all
	$(VENV)/bin/gfxpack verify --repo $(DEMO)/repo --install amdrocm-core8.2-gfx942 --format deb
	$(VENV)/bin/gfxpack verify --repo $(DEMO)/repo --install amdrocm-core --quiet
	$(VENV)/bin/gfxpack why --repo $(DEMO)/repo --install amdrocm-dnn8.2-gfx942 \
	    amdrocm-solver8.2-gfx942 --format deb
	$(VENV)/bin/gfxpack descriptors list-engines --root examples/descriptors --device gfx942 \
	    --symbols examples/descriptor-symbols.json
	$(VENV)/bin/gfxpack descriptors lint --root examples/descriptors \
	    --symbols examples/descriptor-symbols.json | tail -n 1
	$(VENV)/bin/gfxpack report --build $(DEMO)/packages --repo $(DEMO)/repo --html $(DEMO)/report.html
	# Install for one GPU with apt-get and with dnf (repository served on 127.0.0.1), each
	# into a throwaway root, then list what a gfx942 and a gfx1100 load from what is there.
	rm -rf $(DEMO)/root-deb $(DEMO)/root-deb.apt $(DEMO)/root-rpm
	$(VENV)/bin/gfxpack try-install --repo $(DEMO)/repo --client apt --root $(DEMO)/root-deb \
	    amdrocm-core8.2-gfx942
	$(VENV)/bin/gfxpack try-install --repo $(DEMO)/repo --client dnf --root $(DEMO)/root-rpm \
	    amdrocm-core8.2-gfx942
	$(VENV)/bin/gfxpack descriptors list-engines --installed $(DEMO)/root-rpm --device gfx942 \
	    --symbols examples/dnn-provider/symbols.json --level error
	$(VENV)/bin/gfxpack descriptors list-engines --installed $(DEMO)/root-deb --device gfx1100 \
	    --symbols examples/dnn-provider/symbols.json --level error
	$(VENV)/bin/gfxpack descriptors list-engines --installed $(DEMO)/root-deb --device gfx942 \
	    --symbols examples/dnn-provider/symbols.json --level error
	# Last: whether each library's runtime finds its kernel data there for a gfx942, by its
	# own search rule (exit 1 on anything missing or shadowed).
	$(VENV)/bin/gfxpack probe --root $(DEMO)/root-deb --device gfx942
	@echo
	@echo "Above: what each library installed in $(DEMO)/root-deb finds for a gfx942."
	@echo "Release report: $(DEMO)/report.html. To use the repository on this machine (as root):"
	@grep -E '^  (apt|dnf|zypper):' $(DEMO)/repo.txt

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/mypy

test: $(STAMP) system-tools lint docs
	$(VENV)/bin/pytest

# The fast loop while editing: lint and the tests not marked slow, under a minute on
# 2 cores. The tests that take most of the time (hostile-input and property sweeps,
# the real tools' byte checks, start-up timing, fuzz, code compiled with hipcc, wheels
# installed by pip and uv) carry the 'slow' marker, each module or test saying why:
# the marker is the one list of them. make test runs everything.
check: $(STAMP)
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/pytest -q -m 'not slow' -p no:cacheprovider

# The documentation site (build/site), strict: a broken link or anchor fails it.
# After changing a command: $(PY) -m gfxpack.cli.reference (the CLI page and man pages).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The fuzz harnesses of tests/fuzz, run long (make test runs them briefly).
fuzz: $(STAMP) system-tools
	GFXPACK_FUZZ=long $(VENV)/bin/pytest tests/fuzz -q

bench: $(STAMP)
	$(MAKE) system-tools DEB_TOOLS="$(DEB_TOOLS) dpkg-buildpackage:dpkg-dev dh:debhelper zstd:zstd \
	  reprepro:reprepro aptly:aptly"
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/startup.py
	$(PY) bench/plan_scale.py
	$(PY) bench/kpack_speed.py
	$(PY) bench/build_speed.py
	$(PY) bench/build_speed.py --floor-table
	$(PY) bench/descriptor_load.py
	$(PY) bench/verify_scale.py
	$(PY) bench/split_speed.py --work build/realworld
	$(PY) bench/dask_build.py
	$(PY) bench/release_scale.py
	$(PY) bench/stream_scale.py
	$(PY) bench/stream_year.py
	$(PY) bench/image_arches.py
	$(PY) bench/probe_speed.py

# Split Debian's librocsparse0 and librocrand1 end to end (downloads ~100 MB with
# apt-get download; not part of make test), then the jax ROCm wheels from PyPI (split,
# join, index, pip and uv installs), then Debian 13's librocblas0 (166 MB from trixie
# through a private sources list; 2.2 GB unpacked) split, packaged, installed for gfx90a
# and probed. Then the split benchmark on the same bytes.
realworld: $(STAMP)
	$(MAKE) system-tools DEB_TOOLS="$(DEB_TOOLS) zstd:zstd dpkg-deb:dpkg objcopy:binutils"
	$(PY) bench/realworld.py --work build/realworld
	$(PY) bench/realworld.py --wheels --work build/realworld
	$(PY) bench/realworld.py --rocblas --work build/realworld
	$(PY) bench/split_speed.py --work build/realworld

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build src/*.egg-info
