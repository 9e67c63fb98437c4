// maxim_head_servo: the pan/tilt servo board of Maxim's SerialServoDriver
// (maxim_perception/maxim_perception/head/drivers.py). Two hobby servos, one serial line.
//
// Protocol (ASCII, 115200 baud 8N1, lines end with '\n'; a '\r' before it is ignored):
//   host -> board  P<pan_us> T<tilt_us>     e.g. "P1500 T1500": pulse widths in microseconds,
//                                            1 to 5 digits each, one or more spaces between,
//                                            trailing spaces allowed. Blank lines are ignored.
//                  ?                        where are the servos? Nothing moves.
//   board -> host  one line for every non-blank line received:
//                  P<pan_us> T<tilt_us>     the pulses now applied, each clamped to
//                                            PULSE_MIN_US..PULSE_MAX_US;
//                  D                        the servos are detached: no valid P line yet
//                                            (the answer to "?" until then);
//                  E bad line               not the form above: the servos hold;
//                  E line too long          more than LINE_MAX characters: the servos hold.
//                  At start-up, once: "D".
// No snap at start-up: the servos stay detached (no pulse, limp) until the first valid P line,
// which attaches them at its pulses. The board does not know where a limp servo stands; the
// host does (it asks "?" after opening the port, and a board that did not restart answers
// with the pulses it holds), and it ramps from there.
// Watchdog: a line whose next character does not come within LINE_TIMEOUT_MS is dropped
// without an answer (a host that went away mid-line must not have its half line completed
// by the next host's first one). Whatever the host does, or if it is silent, attached servos
// hold their last pulses: they are never re-centred or let go while the board runs.
//
// test/helpers/serial_board.py is a line-for-line transcription of loop() and handleLine()
// in Python, which the host driver's tests run against. THE TWO MUST STAY EQUAL: change
// both together (maxim_perception/test/test_serial_board.py also builds this sketch for the
// host with g++ and checks that both answer the same bytes with the same bytes).

#include <Servo.h>

const uint8_t PAN_PIN = 9;                  // the pan servo's signal wire
const uint8_t TILT_PIN = 10;                // the tilt servo's signal wire
const long BAUD = 115200;
const int PULSE_MIN_US = 500;
const int PULSE_MAX_US = 2500;
const uint8_t LINE_MAX = 32;                // characters before the '\n'
const unsigned long LINE_TIMEOUT_MS = 100;  // a half line older than this is dropped
const uint8_t DIGITS_MAX = 5;

Servo pan;
Servo tilt;
char line[LINE_MAX + 1];
uint8_t length = 0;
bool overflow = false;
unsigned long lastByteMs = 0;
bool attached = false;                      // no pulse before the first valid P line
long panUsNow = 0;                          // the pulses applied since then
long tiltUsNow = 0;

// Reads 1..DIGITS_MAX digits at line[*i]; false when there are none or too many.
bool readNumber(uint8_t *i, long *value) {
  uint8_t digits = 0;
  *value = 0;
  while (line[*i] >= '0' && line[*i] <= '9') {
    if (digits == DIGITS_MAX) {
      return false;
    }
    *value = *value * 10 + (line[*i] - '0');
    (*i)++;
    digits++;
  }
  return digits > 0;
}

// "P<digits> +T<digits> *" and nothing else (the '\r' is gone already).
bool parseLine(long *panUs, long *tiltUs) {
  uint8_t i = 0;
  if (line[i] != 'P') {
    return false;
  }
  i++;
  if (!readNumber(&i, panUs)) {
    return false;
  }
  if (line[i] != ' ') {
    return false;
  }
  while (line[i] == ' ') {
    i++;
  }
  if (line[i] != 'T') {
    return false;
  }
  i++;
  if (!readNumber(&i, tiltUs)) {
    return false;
  }
  while (line[i] == ' ') {
    i++;
  }
  return line[i] == '\0';
}

long clampPulse(long us) {
  if (us < PULSE_MIN_US) {
    return PULSE_MIN_US;
  }
  if (us > PULSE_MAX_US) {
    return PULSE_MAX_US;
  }
  return us;
}

void report(long panUs, long tiltUs) {
  Serial.print('P');
  Serial.print(panUs);
  Serial.print(" T");
  Serial.print(tiltUs);
  Serial.print('\n');
}

// A whole line has arrived (without its '\n').
void handleLine() {
  if (overflow) {
    Serial.print("E line too long\n");
    return;
  }
  if (length > 0 && line[length - 1] == '\r') {
    length--;
  }
  line[length] = '\0';
  if (length == 0) {
    return;                                 // a blank line: nothing to do, nothing to say
  }
  if (length == 1 && line[0] == '?') {
    if (attached) {
      report(panUsNow, tiltUsNow);
    } else {
      Serial.print("D\n");
    }
    return;
  }
  long panUs;
  long tiltUs;
  if (!parseLine(&panUs, &tiltUs)) {
    Serial.print("E bad line\n");
    return;
  }
  panUs = clampPulse(panUs);
  tiltUs = clampPulse(tiltUs);
  if (!attached) {
    // attach() with the pulse range (the Servo library would clamp to 544..2400 us
    // otherwise), and the first pulse set before the timer interrupt can send one: a servo
    // that got the library's default 1500 us for one frame would twitch towards the centre.
    noInterrupts();
    pan.attach(PAN_PIN, PULSE_MIN_US, PULSE_MAX_US);
    tilt.attach(TILT_PIN, PULSE_MIN_US, PULSE_MAX_US);
    pan.writeMicroseconds(panUs);
    tilt.writeMicroseconds(tiltUs);
    interrupts();
    attached = true;
  } else {
    pan.writeMicroseconds(panUs);
    tilt.writeMicroseconds(tiltUs);
  }
  panUsNow = panUs;
  tiltUsNow = tiltUs;
  report(panUs, tiltUs);
}

void setup() {
  Serial.begin(BAUD);
  Serial.print("D\n");                     // detached until the host's first valid line
}

void loop() {
  unsigned long now = millis();
  if (length > 0 && now - lastByteMs > LINE_TIMEOUT_MS) {
    length = 0;                             // the watchdog: drop the half line
    overflow = false;
  }
  while (Serial.available() > 0) {
    char c = (char)Serial.read();
    lastByteMs = now;
    if (c == '\n') {
      handleLine();
      length = 0;
      overflow = false;
    } else if (length < LINE_MAX) {
      line[length] = c;
      length++;
    } else {
      overflow = true;                      // keep reading to the '\n', then say so
    }
  }
}
