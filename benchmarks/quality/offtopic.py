"""Questions no LoCoMo conversation answers: the precision half of the quality benchmark.

Every recall result for one of these is an irrelevant memory put into an agent's
prompt, so the harness reports *admissions per off-topic question* (how many memories
recall returns, at k=10) beside recall@k and MRR. The set was written for this
repository. It mixes technical and general-knowledge questions, requests about personal
facts the conversations never mention, and questions that reuse everyday words the
conversations are full of ("user", "family", "weekend", "friend", "work", "new"), so a
gate that admits on one shared word is caught out.
"""

from __future__ import annotations

TECHNICAL = (
    "How do I configure a Kubernetes ingress controller with TLS?",
    "What is the difference between a mutex and a semaphore?",
    "How can I rotate the credentials of a PostgreSQL replication user?",
    "Which HTTP status code should an API return for a rate-limited request?",
    "How do I squash the last three commits in git?",
    "What does the Python global interpreter lock protect?",
    "How is a B-tree index split when a page is full?",
    "What is the time complexity of inserting into a binary heap?",
    "How do I set a memory limit on a Docker container?",
    "Explain eventual consistency in a distributed key-value store.",
    "What is the default port of a Valkey server?",
    "How do I enable HTTP/2 on an nginx reverse proxy?",
    "What causes a segmentation fault in a C program?",
    "How are JSON web tokens signed and verified?",
    "What is the purpose of a Bloom filter?",
)
GENERAL = (
    "What is the boiling point of water at the top of Mount Everest?",
    "Who wrote the novel War and Peace?",
    "How many moons does Jupiter have?",
    "What is the capital city of Mongolia?",
    "When did the Berlin Wall fall?",
    "Which element has the chemical symbol W?",
    "How long does light from the Sun take to reach Earth?",
    "What currency is used in Switzerland?",
    "Why is the sky blue during the day?",
    "What is the tallest building in the world?",
    "How do vaccines train the immune system?",
    "What is the speed of sound in dry air?",
)
ABSENT_PERSONAL = (
    "What is the user's shipping address for invoices?",
    "What is the user's blood type?",
    "Which bank does the user hold a mortgage with?",
    "What is the user's passport number?",
    "What is the license plate of the user's car?",
    "Which insurance company covers the user's apartment?",
    "What is the user's preferred airline seat?",
    "What is the user's employee ID?",
    "Which dentist does the user see?",
    "What was the user's score on the GRE?",
    "What is the user's wifi password?",
    "Which cryptocurrency wallet does the user use?",
)
SHARED_WORDS = (
    "What is the user's favourite programming language?",
    "Which tax form does the user's family file every year?",
    "What new smartphone model did the user pre-order?",
    "How many hours a week does the user work on spreadsheets?",
    "Which friend lent the user a lawnmower last weekend?",
    "What time does the user's train to work leave?",
    "Which database did the user migrate at work?",
    "What did the user's landlord say about the heating bill?",
    "Which weekend did the user renew a fishing licence?",
    "What is the name of the user's accountant?",
    "How much did the user pay for the new roof?",
    "Which team does the user's family support in cricket?",
    "What did the user's doctor prescribe for the migraine?",
    "Which podcast about stock trading does the user like?",
    "What is the user's plan for the quarterly budget review?",
    "Which friend helped the user assemble a wardrobe?",
)

QUESTIONS: tuple[str, ...] = TECHNICAL + GENERAL + ABSENT_PERSONAL + SHARED_WORDS
