# A host-language check of tilebook's Python VM (compared with python3).
class Animal:
    sound = "..."
    def speak(self):
        return f"{type(self).__name__} says {self.sound}"
class Dog(Animal):
    sound = "woof"
class Puppy(Dog):
    def speak(self):
        return super().speak() + "!"
for a in (Animal(), Dog(), Puppy()):
    print(a.speak())
print(issubclass(Puppy, Animal), isinstance(Puppy(), Dog))
