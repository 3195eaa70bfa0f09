#!/usr/bin/env python3
"""Ignores SIGTERM and sleeps: only SIGKILL ends it."""
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.read()
time.sleep(120)
