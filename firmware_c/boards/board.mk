# board.mk - the board fragment for firmware builds. Include it from any Makefile:
#
#     BOARD ?= qemu-mps2-an386
#     include $(path)/firmware_c/boards/board.mk
#     $(BOARD_CC) $(BOARD_CFLAGS) ... $(BOARD_SRCS) ... $(BOARD_LDFLAGS) -o fw.elf   (BOARD_CFLAGS has CPU_CFLAGS)
#
# Inputs:  BOARD (default qemu-mps2-an386; one of $(BOARD_LIST)); CPU overrides the board's CPU
#          (cortex-m0plus | cortex-m4 | cortex-m7) for compile-only experiments.
# Outputs (all paths absolute):
#   BOARD_DIR       boards/<BOARD>
#   BOARD_CPU       the board's CPU; CPU defaults to it
#   CPU_CFLAGS      -mcpu/-mthumb/-mfloat-abi/-mfpu for CPU (from firmware_c/cpu/<CPU>.mk; also CPU_HAS_FPU,
#                   CPU_HAS_DSP); use them for EVERY object and for the link
#   BOARD_SRCS      board C sources to compile and link (startup, vector table, clock, UART, timer, fault
#                   handler, memcpy/memset/memmove/memcmp/strlen)
#   BOARD_INCLUDES  -I flags (board.h)
#   BOARD_CFLAGS    CPU_CFLAGS + BOARD_INCLUDES + -DBOARD_... defines + freestanding/section flags
#   BOARD_LDSCRIPT  the linker script
#   BOARD_LDFLAGS   -T script, -L for its INCLUDE, -nostartfiles, newlib-nano specs, --gc-sections, -lm
#                   (put it last on the link line; gcc adds -lc_nano -lgcc)
#   BOARD_CC, BOARD_OBJCOPY, BOARD_SIZE   the toolchain (arm-none-eabi-*)
#   BOARD_QEMU_MACHINE  the qemu-system-arm -M name when the board is emulated (else empty)
#   BOARD_STUB      1 for boards only laid out (compile-only in CI; pins to fill in), 0 for runnable ones

BOARDS_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
FIRMWARE_CPU_DIR := $(abspath $(BOARDS_DIR)/../cpu)

BOARD_LIST := qemu-mps2-an386 qemu-mps2-an500 stm32f746-disco stm32h743 nrf52840-dk rp2040-pico
BOARD ?= qemu-mps2-an386

ifeq ($(BOARD),esp32-s3)
$(error esp32-s3 is an Xtensa part: build it with xtensa-esp32s3-elf-gcc (see $(BOARDS_DIR)/esp32-s3/README.md))
endif
ifeq ($(filter $(BOARD),$(BOARD_LIST)),)
$(error unknown BOARD '$(BOARD)'; known: $(BOARD_LIST))
endif

BOARD_DIR := $(BOARDS_DIR)/$(BOARD)
BOARD_QEMU_MACHINE :=
BOARD_STUB := 0
include $(BOARD_DIR)/board.mk

CPU ?= $(BOARD_CPU)
ifeq ($(wildcard $(FIRMWARE_CPU_DIR)/$(CPU).mk),)
$(error unknown CPU '$(CPU)'; known: cortex-m0plus cortex-m4 cortex-m7)
endif
include $(FIRMWARE_CPU_DIR)/$(CPU).mk

BOARD_CROSS ?= arm-none-eabi-
BOARD_CC := $(BOARD_CROSS)gcc
BOARD_OBJCOPY := $(BOARD_CROSS)objcopy
BOARD_SIZE := $(BOARD_CROSS)size

BOARD_SRCS := $(BOARDS_DIR)/common/startup_cortexm.c \
              $(BOARDS_DIR)/common/cortexm_timer.c \
              $(BOARDS_DIR)/common/board_common.c \
              $(BOARDS_DIR)/common/minilibc.c \
              $(addprefix $(BOARD_DIR)/,$(BOARD_LOCAL_SRCS))
BOARD_INCLUDES := -I$(BOARDS_DIR) -I$(BOARDS_DIR)/common
BOARD_CFLAGS := $(CPU_CFLAGS) $(BOARD_INCLUDES) -DBOARD_NUM_IRQS=$(BOARD_NUM_IRQS) $(BOARD_DEFS) \
                -ffreestanding -ffunction-sections -fdata-sections
BOARD_LDSCRIPT := $(BOARD_DIR)/board.ld
# No crt0 (our startup); newlib-nano's libc/libm only for what the program itself calls (floor, frexp,
# strcmp, ...): nothing that needs syscalls. memcpy & co. come from common/minilibc.c (objects win).
BOARD_LDFLAGS := -T$(BOARD_LDSCRIPT) -L$(BOARDS_DIR)/common -nostartfiles --specs=nano.specs \
                 -Wl,--gc-sections -lm
