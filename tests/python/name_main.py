# A host-language check of tilebook's Python VM (compared with python3).
def main():
    print("running main", __name__)
if __name__ == "__main__":
    main()
