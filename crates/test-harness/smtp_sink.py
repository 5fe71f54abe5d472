"""An SMTP sink for the end-to-end tests.

Run as a handler of aiosmtpd, a real SMTP server:
    python3 -m aiosmtpd -n -l 127.0.0.1:2525 -c smtp_sink.JsonDir /tmp/mail
Each delivered message becomes one JSON file in the directory:
{"from": ..., "to": [...], "subject": ..., "body": <decoded plain-text body>}.
"""

import email
import json
import os
import time
from email import policy


class JsonDir:
    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    @classmethod
    def from_cli(cls, parser, *args):
        if len(args) != 1:
            parser.error("JsonDir takes one argument: the mail directory")
        return cls(args[0])

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=policy.default)
        part = msg.get_body(preferencelist=("plain",))
        record = {
            "from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "subject": str(msg.get("subject", "")),
            "body": part.get_content() if part is not None else "",
        }
        name = "%d.json" % time.time_ns()
        tmp = os.path.join(self.directory, name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(self.directory, name))
        return "250 Message accepted for delivery"
