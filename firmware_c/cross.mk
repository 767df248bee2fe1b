# cross.mk: Linux cross builds of the host library and runner for Raspberry Pi CPUs (included by Makefile).
#
#   make aarch64     build/aarch64/libedge.so + build/aarch64/edge-run-c   (aarch64-linux-gnu-gcc: 64-bit Pi OS,
#                    Pi 3/4/5 and Zero 2 W)
#   make armhf       build/armhf/libedge.so + build/armhf/edge-run-c       (arm-linux-gnueabihf-gcc: 32-bit Pi OS
#                    on a Pi 2/3/4; -mfpu=neon-vfpv4 -mfloat-abi=hard: the Cortex-A7/A53/A72 FPU with NEON and
#                    fused multiply-add, hard-float calling convention as Debian/Raspbian armhf userland uses)
#   make cross       both
#   make aarch64 MODELS="a.tflite b.tflite"   op table with only those models' ops (as for the other builds)
#
# Debian (bookworm) packages: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
#                             gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-user
# Run a cross-built runner on x86-64 with qemu-user; -L names the target's sysroot (dynamic loader and libc),
# -cpu the oldest Pi core of that userland (Pi 3's Cortex-A53, Pi 2's Cortex-A7):
#     qemu-aarch64 -cpu cortex-a53 -L /usr/aarch64-linux-gnu build/aarch64/edge-run-c MODEL IN.bin OUT.bin
#     qemu-arm -cpu cortex-a7 -L /usr/arm-linux-gnueabihf build/armhf/edge-run-c MODEL IN.bin OUT.bin
# (tests/test_c_cross.py does that on several models and compares the outputs with the x86-64 build's.)
#
# Flags: the host build's warnings (-std=c99 -Wall -Wextra -Werror ...) and -O2, plus -ffp-contract=off so the
# compiler never fuses a float multiply and add into one FMA instruction (both CPUs have FMA, x86-64's baseline
# does not): float32 results then round as on x86-64, byte for byte. -std=c99 already implies it; it is spelled
# out so a CROSS_OPT override cannot change the arithmetic silently. NEON is enabled on armhf but GCC does not
# auto-vectorize float code with it (NEON flushes denormals to zero) without -funsafe-math-optimizations, which
# is not used.

AARCH64_CC ?= aarch64-linux-gnu-gcc
ARMHF_CC ?= arm-linux-gnueabihf-gcc
CROSS_OPT ?= -O2
CROSS_CFLAGS := $(WARN) $(CROSS_OPT) -fPIC -g -ffp-contract=off -DEDGE_WITH_SIMD=1
CROSS_ARCH_FLAGS_aarch64 := -march=armv8-a
CROSS_ARCH_FLAGS_armhf := -march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard
CROSS_PKGS_aarch64 := gcc-aarch64-linux-gnu libc6-dev-arm64-cross
CROSS_PKGS_armhf := gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
CROSS_ARCHES := aarch64 armhf

.PHONY: cross $(CROSS_ARCHES) $(addprefix cross-cc-check-,$(CROSS_ARCHES))

cross: $(CROSS_ARCHES)

# build/<arch>/edge_ops_generated.c comes from the build/%/edge_ops_generated.c rule of the Makefile. Objects
# are compiled once (-fPIC) and linked into both the library and the runner (make -j builds them in parallel).
define cross_arch
$(1)_CROSS_OBJ := $$(patsubst %.c,build/$(1)/obj/%.o,$$(CORE_SRC) $$(HOST_SRC)) build/$(1)/obj/edge_ops_generated.o

$(1): build/$(1)/libedge.so build/$(1)/edge-run-c

cross-cc-check-$(1):
	@command -v $$($(2)) >/dev/null || { echo "$$($(2)) not found: apt-get install $$(CROSS_PKGS_$(1))"; exit 1; }

build/$(1)/obj/%.o: %.c $$(HEADERS) cross.mk | cross-cc-check-$(1)
	@mkdir -p $$(dir $$@)
	$$($(2)) $$(CROSS_CFLAGS) $$(CROSS_ARCH_FLAGS_$(1)) $$(INC) -c $$< -o $$@

build/$(1)/obj/edge_ops_generated.o: build/$(1)/edge_ops_generated.c $$(HEADERS) cross.mk | cross-cc-check-$(1)
	@mkdir -p $$(dir $$@)
	$$($(2)) $$(CROSS_CFLAGS) $$(CROSS_ARCH_FLAGS_$(1)) $$(INC) -c $$< -o $$@

build/$(1)/libedge.so: $$($(1)_CROSS_OBJ)
	$$($(2)) $$(CROSS_ARCH_FLAGS_$(1)) -shared -o $$@ $$^ -lm -pthread

build/$(1)/edge-run-c: build/$(1)/obj/host/edge_run.o $$($(1)_CROSS_OBJ)
	$$($(2)) $$(CROSS_ARCH_FLAGS_$(1)) -o $$@ $$^ -lm -pthread
endef
$(eval $(call cross_arch,aarch64,AARCH64_CC))
$(eval $(call cross_arch,armhf,ARMHF_CC))
