"""The ears and the voice: audio in (a microphone, a WAV/FLAC file, an audio topic), voice
activity detection with pre-roll, transcription with faster-whisper biased by the names the
robot knows, whether speech was meant for the robot, and a voice that the ears do not hear.

Plain Python (no rclpy): the hearing node (nodes/hearing_node.py) only translates messages
and parameters.
"""
