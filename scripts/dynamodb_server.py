"""moto's DynamoDB-API server for the tests, on a free loopback port, one request at a time.

moto's own `moto_server` serves requests on threads, and its backend is not thread-safe: under
concurrent transactions it fails with 500s ("dictionary changed size during iteration").
Serving one request at a time gives the serializable transactions DynamoDB promises, while the
clients still send their requests concurrently.

Prints the port on the first line of stdout, then serves until killed.
"""

import sys

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server


def main() -> None:
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server(host, 0, app, threaded=False)
    # Room for every connection of a burst of concurrent clients.
    server.socket.listen(1024)
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
