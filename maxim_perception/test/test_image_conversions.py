"""Image messages <-> numpy without cv_bridge: encodings, byte order of YUV 4:2:2, rows padded
beyond the width, malformed data, compressed JPEG and PNG (no ROS graph, no rclpy.init)."""

import numpy as np
import pytest
from sensor_msgs.msg import CompressedImage, Image

from maxim_perception.conversions import (check_image, compressed_to_bgr,
                                          compressed_to_image_msg, image_to_compressed,
                                          image_to_msg, ImageConversionError, MalformedImage,
                                          msg_to_bgr, msg_to_image, CAMERA_ENCODINGS,
                                          time_msg, UnsupportedEncoding, yuv422_to_bgr,
                                          yuv422_to_image_msg)


def pattern(height=48, width=64) -> np.ndarray:
    """BGR blocks of 16x16 px in known colours (JPEG keeps flat 8x8-aligned blocks close)."""
    colours = np.array([[30, 30, 210], [200, 60, 30], [40, 200, 40], [128, 128, 128],
                        [0, 0, 0], [255, 255, 255], [0, 200, 255]], np.uint8)
    yy, xx = np.mgrid[0:height, 0:width]
    return colours[(yy // 16 * 3 + xx // 16) % len(colours)]


@pytest.mark.parametrize('encoding', ['bgr8', 'rgb8', 'mono8'])
@pytest.mark.parametrize('pad', [0, 5, 64])
def test_padded_rows_are_cropped_and_the_pixels_kept(encoding, pad):
    bgr = pattern(6, 10)
    arr = {'bgr8': bgr, 'rgb8': np.ascontiguousarray(bgr[:, :, ::-1]),
           'mono8': np.ascontiguousarray(bgr[:, :, 1])}[encoding]
    row = 10 * (1 if encoding == 'mono8' else 3)
    msg = image_to_msg(arr, encoding, time_msg(12.5), 'cam', step=row + pad)
    assert (msg.step, len(msg.data)) == (row + pad, (row + pad) * 6)
    raw = np.frombuffer(msg.data, np.uint8).reshape(6, row + pad)
    assert not raw[:, row:].any()                  # the padding is zeros, not pixels
    check_image(msg)
    assert np.array_equal(msg_to_image(msg), arr)
    out = msg_to_bgr(msg)
    assert out.shape == (6, 10, 3)
    if encoding == 'mono8':
        assert np.array_equal(out[:, :, 0], arr) and np.array_equal(out[:, :, 2], arr)
    else:
        assert np.array_equal(out, bgr)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == \
        (12, 500_000_000, 'cam')


def test_a_step_under_a_row_is_refused_when_building_a_message():
    with pytest.raises(ImageConversionError, match='under a row'):
        image_to_msg(pattern(4, 4), 'bgr8', step=11)


def yuv422(pairs, order: str, rows=2, pad=0) -> Image:
    """An image of (Y0, U, Y1, V) pixel pairs side by side, in the byte order of `order`."""
    line = []
    for y0, u, y1, v in pairs:
        line += [y0, u, y1, v] if order in ('yuyv', 'yuv422_yuy2') else [u, y0, v, y1]
    row = bytes(line) + bytes(pad)
    return Image(height=rows, width=2 * len(pairs), encoding=order, step=len(row),
                 data=row * rows)


# BT.601 (studio swing), as OpenCV converts YUV 4:2:2: pure red and pure blue.
RED_YUV, BLUE_YUV = (81, 90, 81, 240), (41, 240, 41, 110)


@pytest.mark.parametrize('order', ['yuv422', 'uyvy', 'yuv422_yuy2', 'yuyv'])
@pytest.mark.parametrize('pad', [0, 8])
def test_yuv422_in_both_byte_orders_becomes_the_right_colours(order, pad):
    msg = yuv422([RED_YUV, BLUE_YUV], order, pad=pad)
    msg.header.stamp, msg.header.frame_id = time_msg(4.5), 'cam'
    check_image(msg)
    bgr = yuv422_to_bgr(msg).astype(int)
    assert bgr.shape == (2, 4, 3)
    assert np.abs(bgr[:, :2] - [0, 0, 255]).max() <= 4, bgr      # red, both rows
    assert np.abs(bgr[:, 2:] - [255, 0, 0]).max() <= 4, bgr      # blue
    out = yuv422_to_image_msg(msg)
    assert (out.encoding, out.step, out.header.frame_id) == ('bgr8', 12, 'cam')
    assert out.header.stamp == msg.header.stamp
    assert np.array_equal(msg_to_image(out), bgr)
    with pytest.raises(UnsupportedEncoding):      # attention reads no YUV: the camera converts
        msg_to_bgr(msg)


def test_yuv422_with_an_odd_width_is_malformed():
    msg = Image(height=1, width=3, encoding='yuyv', step=6, data=bytes(6))
    with pytest.raises(MalformedImage, match='even width'):
        check_image(msg)
    with pytest.raises(MalformedImage):
        yuv422_to_bgr(msg)


@pytest.mark.parametrize('encoding', ['bayer_rggb8', '32FC1', 'mono16', 'nv21', ''])
def test_other_encodings_get_a_one_line_error_naming_what_is_supported(encoding):
    msg = Image(height=2, width=2, encoding=encoding, step=8, data=bytes(16))
    with pytest.raises(UnsupportedEncoding) as err:
        check_image(msg)
    text = str(err.value)
    assert '\n' not in text and repr(encoding) in text
    assert all(e in text for e in CAMERA_ENCODINGS) and 'compressed' in text


@pytest.mark.parametrize('fields,reason', [
    (dict(step=30, data=bytes(30 * 4 - 1)), 'bytes of data'),     # a byte short
    (dict(step=30, data=bytes(30 * 4 + 30)), 'bytes of data'),    # a row too many
    (dict(step=29, data=bytes(29 * 4)), 'under a row'),
    (dict(width=0, step=0, data=b''), 'empty'),
    (dict(height=0, data=b''), 'empty'),
])
def test_data_that_does_not_hold_the_image_is_malformed(fields, reason):
    base = dict(height=4, width=10, encoding='rgb8', step=30, data=bytes(120))
    msg = Image(**{**base, **fields})
    with pytest.raises(MalformedImage, match=reason):
        check_image(msg)


def test_a_stamp_that_is_no_time_is_malformed():
    msg = image_to_msg(pattern(4, 4), 'bgr8')
    msg.header.stamp.nanosec = 1_000_000_000
    with pytest.raises(MalformedImage, match='nanosec'):
        check_image(msg)


def test_both_errors_are_image_conversion_errors():
    assert issubclass(UnsupportedEncoding, ImageConversionError)
    assert issubclass(MalformedImage, ImageConversionError)
    with pytest.raises(MalformedImage):       # msg_to_image raises the typed errors too
        msg_to_image(Image(height=2, width=2, encoding='bgr8', step=6, data=b'123'))
    with pytest.raises(UnsupportedEncoding):
        msg_to_image(Image(height=2, width=2, encoding='bayer_rggb8', step=2, data=b'1234'))


def test_jpeg_comes_back_within_jpeg_tolerance_with_its_header():
    bgr = pattern()
    msg = image_to_compressed(bgr, time_msg(3.25), 'cam', quality=95)
    out = compressed_to_image_msg(msg)
    assert (out.encoding, out.width, out.height, out.step) == ('bgr8', 64, 48, 192)
    assert out.header.frame_id == 'cam' and out.header.stamp == msg.header.stamp
    diff = np.abs(msg_to_image(out).astype(int) - bgr)
    # JPEG blurs the colour at block edges (4:2:0 chroma); block centres keep their colour.
    assert diff.mean() < 8 and diff[8::16, 8::16].max() <= 10, diff.mean()


def test_png_comes_back_exactly_and_grey_jpeg_as_bgr():
    import cv2
    bgr = pattern()
    ok, buf = cv2.imencode('.png', bgr)
    assert ok
    msg = CompressedImage(format='png', data=buf.tobytes())
    assert np.array_equal(compressed_to_bgr(msg), bgr)
    grey = image_to_compressed(np.ascontiguousarray(bgr[:, :, 1]))
    assert grey.format.startswith('mono8') and compressed_to_bgr(grey).shape == (48, 64, 3)


@pytest.mark.parametrize('fmt,data,error', [
    ('16UC1; compressedDepth png', b'\x89PNG', UnsupportedEncoding),
    ('h264', b'\x00\x00\x00\x01', UnsupportedEncoding),
    ('jpeg', b'not a jpeg at all', MalformedImage),
    ('jpeg', b'', MalformedImage),
])
def test_compressed_images_that_are_not_still_jpeg_or_png(fmt, data, error):
    with pytest.raises(error):
        compressed_to_image_msg(CompressedImage(format=fmt, data=data))
